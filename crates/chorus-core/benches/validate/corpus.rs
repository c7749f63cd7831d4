//! A deterministic, realistic mixed corpus of messages and handoffs for the validation benchmark.

use serde_json::{Value, json};

const PNG_1X1: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

fn message(i: usize) -> Value {
    let call_id = format!("call_{i:06}");
    match i % 7 {
        0 => {
            json!({"id": format!("msg_{i}"), "role": "user", "name": "customer", "created_at": 1_715_000_000 + i,
            "content": format!("My router RouterX-Pro drops the connection every {} minutes since Tuesday. Can you help?", i % 90)})
        }
        1 => json!({"id": format!("msg_{i}"), "role": "assistant", "content": null, "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": "search_knowledge_base",
             "arguments": format!("{{\"keywords\": [\"router\", \"disconnect\", \"case {i}\"], \"year_filter\": 2023}}")}}],
            "metadata": {"token_usage": {"prompt_tokens": 500 + i % 300, "completion_tokens": 42, "total_cost_usd": 0.002},
                         "latency_ms": {"ttft": 400, "total_time": 1200}, "model_version": "gpt-4.1-2025-04-14", "trace_id": format!("trace_{i}")}}),
        2 => {
            json!({"role": "tool", "tool_call_id": format!("call_{:06}", i - 1), "name": "search_knowledge_base",
            "content": "{\"status\": \"success\", \"results\": [{\"title\": \"Intermittent disconnects\", \"snippet\": \"Update the firmware to 2.4.1 ...\"}]}"})
        }
        3 => json!({"role": "user", "content": [
            {"type": "text", "text": "Here is a photo of the status lights and the last frames of the camera."},
            {"type": "image_url", "image_url": {"url": format!("https://cdn.example.com/uploads/{i}.jpg"), "detail": "high"}},
            {"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{PNG_1X1}"), "detail": "low"},
             "video_metadata": {"video_id": "vid_abc", "timestamp_sec": 12.5, "frame_index": 300}},
            {"type": "data", "kind": "state", "data": {"ticket": i, "step": "collect_evidence"}, "_instance": "run-1"}]}),
        4 => json!({"role": "assistant", "name": "ResearchAgent_01",
            "content": [{"type": "reasoning", "text": "The firmware note matches the symptoms."},
                        {"type": "text", "text": "Revenue grew strongly [cit_01], mostly from cloud services [cit_02].", "index": 0}],
            "metadata": {"citation_map": {
                "cit_01": {"source_type": "pdf_document", "source_id": "doc_fin_report_2023", "source_name": "2023_Financial_Report.pdf",
                           "location": {"page_number": 42, "bbox": [100, 200, 500, 600], "text_snippet": "Revenue increased by 20% YoY."}, "score": 0.89},
                "cit_02": {"source_type": "web_search", "url": "https://en.wikipedia.org/wiki/Cloud_computing", "access_date": "2024-03-20"}},
                "safety_check": {"flagged": false, "categories": []}}}),
        5 => json!({"role": "tool", "tool_call_id": format!("call_render_{i}"), "content": [
            {"type": "text", "text": "{\"status\": \"rendered_successfully\"}"},
            {"type": "image_url", "image_url": {"url": format!("https://charts.example.com/{i}.png")}}]}),
        _ => json!({"role": "tool", "tool_call_id": format!("call_delete_db_{i}"),
            "content": "{\"status\": \"halted\", \"reason\": \"human_confirmation_required\", \"message\": \"This is a high-risk operation. Ask the user first.\"}"}),
    }
}

fn handoff(i: usize) -> Value {
    let (handoff_type, data) = match i % 4 {
        0 => (
            "ESCALATION",
            json!({"issue_category": "NETWORK_CONNECTIVITY", "severity": "CRITICAL",
            "customer_info": {"user_id": format!("user{i}@example.com"), "name": "John Doe", "contact_number": "+1-555-123-4567"},
            "technical_details": {"router_model": "RouterX-Pro", "isp": "GlobalNet", "symptoms": "Intermittent disconnections.",
                                  "logs_attached": true, "log_references": [format!("log_{i}")]}}),
        ),
        1 => (
            "REQUEST_INFORMATION",
            json!({"requested_info_keys": ["router_firmware", "line_quality"], "query_parameters": {"customer": i}}),
        ),
        2 => (
            "STATUS_UPDATE",
            json!({"status": "IN_PROGRESS", "progress_percent": i % 100, "summary": "Remote diagnostic scheduled."}),
        ),
        _ => (
            "TASK_TRANSFER",
            json!({"task_description": "Build a 2D snake game in Python", "status": "in_progress",
            "completed_steps": ["requirements", "pick pygame"], "constraints": ["detailed comments"], "artifacts": {"design_doc": "s3://bucket/spec.md"}}),
        ),
    };
    let priority = ["LOW", "MEDIUM", "HIGH", "CRITICAL"][i % 4];
    json!({
        "metadata": {"message_id": format!("a1b2c3d4-e5f6-4890-8234-{i:012}"), "timestamp": "2023-10-27T10:30:00.123Z",
            "protocol_version": "1.0.0", "sender_id": "customer_service_agent_001", "recipient_id": "technical_support_agent_pool",
            "correlation_id": format!("flow-{i}"), "task_id": format!("task-{i}"), "priority": priority,
            "expiration_time": "2023-10-27T12:00:00.000Z"},
        "context": {"workflow_state": "CUSTOMER_ISSUE_ESCALATED",
            "previous_actions": [{"action_type": "DIAGNOSTIC_ATTEMPT", "details": "Attempted to troubleshoot network connectivity issues.", "timestamp": "2023-10-27T10:25:30.000Z"}],
            "historical_data_summary": "User reported intermittent internet connection loss for 2 days."},
        "payload": {"handoff_type": handoff_type, "data": data},
        "instructions": {"next_steps_suggestion": "Review logs.", "required_actions": ["DIAGNOSE_ROOT_CAUSE"],
            "constraints": {"time_limit": "PT2H"}, "failure_handling_strategy": {"retry_count": 2, "escalate_to": "level3_network_expert_agent_pool"}}
    })
}

/// `n` documents, about three messages for every handoff, as JSON bytes.
pub fn corpus(n: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| {
            let doc = if i % 4 == 3 { handoff(i) } else { message(i) };
            serde_json::to_vec(&doc).expect("corpus documents serialize")
        })
        .collect()
}
