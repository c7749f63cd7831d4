#!/usr/bin/env bash
# Two agents talk through a running `chorus serve` with curl and jq.
#
# customer_service_agent_001 escalates seed 003's network problem to technical_support_agent_pool;
# technical_support_agent_001, who reads that pool, receives it from its inbox stream (Server-Sent
# Events), acknowledges it and answers with a STATUS_UPDATE, which customer service receives and
# acknowledges in turn. Start the hub first:
#
#     chorus serve --config examples/clients/chorus.toml
#     bash examples/clients/curl/exchange.sh
#
# CHORUS_URL (default http://127.0.0.1:7700), CS_TOKEN and TS_TOKEN override the quick-start
# values. Exit code 0 when both deliveries arrived, 1 otherwise.
set -euo pipefail

URL="${CHORUS_URL:-http://127.0.0.1:7700}"
URL="${URL%/}"
CS_TOKEN="${CS_TOKEN:-customer-service-quickstart-token}"
TS_TOKEN="${TS_TOKEN:-technical-support-quickstart-token}"
SEED="$(dirname "$0")/../../seeds/003-escalation.json"

new_id() { uuidgen 2>/dev/null | tr 'A-Z' 'a-z' || cat /proc/sys/kernel/random/uuid; }

# publish TOKEN: POST the document on standard input as the agent owning TOKEN; prints the answer.
publish() {
  curl -sS --fail-with-body -H "Authorization: Bearer $1" -H 'Content-Type: application/json' \
    --data-binary @- "$URL/v1/messages"
}

# receive TOKEN INBOX MESSAGE_ID: reads the inbox stream until MESSAGE_ID arrives, acknowledging
# each delivery once handled (here: printed); prints that delivery's event data.
receive() {
  local token="$1" inbox="$2" wanted="$3" line event="" data id attempt
  exec 3< <(curl -sS -N --fail-with-body --max-time 20 -H "Authorization: Bearer $token" "$URL/v1/agents/$inbox/inbox")
  local reader=$!
  while IFS= read -r line <&3; do
    line="${line%$'\r'}"
    case "$line" in
      event:*) event="${line#event:}"; event="${event# }" ;;
      data:*)
        data="${line#data:}"
        if [ "$event" = message ]; then
          id="$(jq -r .message_id <<<"$data")"
          attempt="$(jq -r .attempt <<<"$data")"
          curl -sS --fail-with-body -X POST -H "Authorization: Bearer $token" \
            "$URL/v1/agents/$inbox/inbox/$id/ack?attempt=$attempt"
          if [ "$id" = "$wanted" ]; then
            kill "$reader" 2>/dev/null || true
            exec 3<&-
            printf '%s\n' "$data"
            return 0
          fi
          echo "$inbox: acknowledged an earlier message $id" >&2
        elif [ "$event" = error ]; then
          echo "$inbox: error event: $data" >&2
        fi ;;
      "") event="" ;;
    esac
  done
  exec 3<&-
  echo "exchange.sh: the inbox stream of $inbox ended before $wanted arrived" >&2
  return 1
}

task_id="task-$(new_id | tr -d - | cut -c1-12)"
escalation_id="$(new_id)"
# Seed 003's escalation with a fresh id, the current time and an expiry two hours ahead.
escalation="$(jq --arg id "$escalation_id" --arg task "$task_id" '
  .metadata.message_id = $id
  | .metadata.task_id = $task | .metadata.correlation_id = $task
  | .metadata.timestamp = (now | strftime("%Y-%m-%dT%H:%M:%S.000Z"))
  | .metadata.expiration_time = (now + 7200 | strftime("%Y-%m-%dT%H:%M:%S.000Z"))' "$SEED")"
answer="$(publish "$CS_TOKEN" <<<"$escalation")"
echo "customer service escalated $escalation_id to $(jq -c .queues <<<"$answer")"

got="$(receive "$TS_TOKEN" technical_support_agent_pool "$escalation_id")"
echo "technical support received $(jq -r '.message.payload.data | "\(.issue_category) (\(.severity)) for \(.customer_info.name)"' <<<"$got"), attempt $(jq .attempt <<<"$got")"

update_id="$(new_id)"
# technical_support_agent_001's answer: the context carried on, one more action, a status.
update="$(jq --arg id "$update_id" '.message | {
  metadata: {
    message_id: $id,
    timestamp: (now | strftime("%Y-%m-%dT%H:%M:%S.000Z")),
    protocol_version: "1.0.0",
    sender_id: "technical_support_agent_001",
    recipient_id: .metadata.sender_id,
    correlation_id: .metadata.correlation_id,
    task_id: .metadata.task_id,
    priority: "HIGH"
  },
  context: (.context
    | .workflow_state = "DIAGNOSIS_IN_PROGRESS"
    | .previous_actions += [{action_type: "LOG_REVIEW", details: "Read log_file_id_123.",
        timestamp: (now | strftime("%Y-%m-%dT%H:%M:%S.000Z"))}]),
  payload: {
    handoff_type: "STATUS_UPDATE",
    data: {
      status: "IN_PROGRESS",
      progress_percent: 40,
      summary: "Logs show the modem dropping its DHCP lease; remote session booked.",
      in_response_to: .metadata.message_id
    }
  },
  instructions: {}
}' <<<"$got")"
publish "$TS_TOKEN" <<<"$update" >/dev/null
echo "technical support sent STATUS_UPDATE $update_id"

back="$(receive "$CS_TOKEN" customer_service_agent_001 "$update_id")"
echo "customer service received STATUS_UPDATE $(jq -r '.message.payload.data | "\(.status): \(.summary)"' <<<"$back")"
echo "the task in the web UI: $URL/#/task/$task_id"
