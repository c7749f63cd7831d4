"""Seed-003 handoff messages for the seven standard types, as Python dicts ready to publish.

Each helper takes the type's required data fields as arguments, further data fields as
``extra={...}``, and the envelope's options (``task_id``, ``priority``, ``workflow_state``,
``previous_actions``, ``summary``, ``instructions``, ``correlation_id``, ``expiration_time``,
``message_id``) as keywords; ids and the time are filled in::

    escalation("triage", "tech_pool", issue_category="NETWORK", severity="HIGH",
               customer_info={"user_id": "u1"}, technical_details={"isp": "GlobalNet"})
"""

from __future__ import annotations

import datetime
import uuid
from typing import Any, Dict, List, Optional, Sequence, Union

__all__ = [
    "PROTOCOL_VERSION",
    "approval_request",
    "escalation",
    "handoff",
    "notification",
    "provide_information",
    "request_information",
    "status_update",
    "task_transfer",
]

PROTOCOL_VERSION = "1.0.0"
"""The seed-003 protocol version the helpers write."""

Recipients = Union[str, Sequence[str]]


def _now() -> str:
    moment = datetime.datetime.now(datetime.timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def handoff(
    handoff_type: str,
    sender: str,
    recipient: Recipients,
    data: Dict[str, Any],
    *,
    task_id: Optional[str] = None,
    priority: str = "MEDIUM",
    workflow_state: str = "HANDED_OFF",
    previous_actions: Sequence[Dict[str, Any]] = (),
    summary: Optional[str] = None,
    instructions: Optional[Dict[str, Any]] = None,
    correlation_id: Optional[str] = None,
    expiration_time: Optional[str] = None,
    message_id: Optional[str] = None,
) -> Dict[str, Any]:
    """A handoff of any type (the seven standard ones or a custom one) from ``sender`` to
    ``recipient`` (an agent, a pool, or a list of them) carrying ``data``."""
    metadata: Dict[str, Any] = {
        "message_id": message_id or str(uuid.uuid4()),
        "timestamp": _now(),
        "protocol_version": PROTOCOL_VERSION,
        "sender_id": sender,
        "recipient_id": recipient if isinstance(recipient, str) else list(recipient),
        "task_id": task_id or f"task-{uuid.uuid4()}",
        "priority": priority,
    }
    if correlation_id is not None:
        metadata["correlation_id"] = correlation_id
    if expiration_time is not None:
        metadata["expiration_time"] = expiration_time
    context: Dict[str, Any] = {"workflow_state": workflow_state,
                               "previous_actions": list(previous_actions)}
    if summary is not None:
        context["historical_data_summary"] = summary
    return {
        "metadata": metadata,
        "context": context,
        "payload": {"handoff_type": handoff_type, "data": data},
        "instructions": dict(instructions or {}),
    }


def task_transfer(sender: str, recipient: Recipients, task_description: str, *,
                  extra: Optional[Dict[str, Any]] = None, **envelope: Any) -> Dict[str, Any]:
    """TASK_TRANSFER: hand a task over."""
    return handoff("TASK_TRANSFER", sender, recipient, {"task_description": task_description, **(extra or {})}, **envelope)


def request_information(sender: str, recipient: Recipients, requested_info_keys: List[str], *,
                        extra: Optional[Dict[str, Any]] = None, **envelope: Any) -> Dict[str, Any]:
    """REQUEST_INFORMATION: ask for these keys."""
    return handoff("REQUEST_INFORMATION", sender, recipient, {"requested_info_keys": requested_info_keys, **(extra or {})}, **envelope)


def provide_information(sender: str, recipient: Recipients, provided_info: Dict[str, Any], *,
                        extra: Optional[Dict[str, Any]] = None, **envelope: Any) -> Dict[str, Any]:
    """PROVIDE_INFORMATION: answer a request."""
    return handoff("PROVIDE_INFORMATION", sender, recipient, {"provided_info": provided_info, **(extra or {})}, **envelope)


def escalation(sender: str, recipient: Recipients, issue_category: str, severity: str, customer_info: Dict[str, Any], technical_details: Dict[str, Any], *,
               extra: Optional[Dict[str, Any]] = None, **envelope: Any) -> Dict[str, Any]:
    """ESCALATION: pass an issue up."""
    return handoff("ESCALATION", sender, recipient, {"issue_category": issue_category, "severity": severity, "customer_info": customer_info, "technical_details": technical_details, **(extra or {})}, **envelope)


def notification(sender: str, recipient: Recipients, event_type: str, message: str, *,
                 extra: Optional[Dict[str, Any]] = None, **envelope: Any) -> Dict[str, Any]:
    """NOTIFICATION: tell of an event."""
    return handoff("NOTIFICATION", sender, recipient, {"event_type": event_type, "message": message, **(extra or {})}, **envelope)


def status_update(sender: str, recipient: Recipients, status: str, *,
                  extra: Optional[Dict[str, Any]] = None, **envelope: Any) -> Dict[str, Any]:
    """STATUS_UPDATE: report progress."""
    return handoff("STATUS_UPDATE", sender, recipient, {"status": status, **(extra or {})}, **envelope)


def approval_request(sender: str, recipient: Recipients, action: str, reason: str, *,
                     extra: Optional[Dict[str, Any]] = None, **envelope: Any) -> Dict[str, Any]:
    """APPROVAL_REQUEST: ask for an action to be approved."""
    return handoff("APPROVAL_REQUEST", sender, recipient, {"action": action, "reason": reason, **(extra or {})}, **envelope)
