"""Seed-003 handoff messages for the seven standard types, as Python dicts ready to publish.

Each builder takes the sender, the recipient (an agent, a pool, or a list of them) and the
type's data fields as arguments named as in the type's schema (``chorus.validate.schema``,
``schemas/handoff-data/`` in the repository): the required fields may be given by position or
by name, the optional ones by name only. ``extra={...}`` adds fields the builder does not name.
The envelope is filled in (a new ``message_id`` and ``task_id``, the current time, the
protocol version); these keywords, the same for every builder, set the rest of it:

``task_id``, ``priority``, ``correlation_id``, ``expiration_time``, ``message_id``
    the ``metadata`` fields of the same names;
``workflow_state``, ``previous_actions``, ``history_summary``, ``user_interaction_history``
    the ``context`` (``history_summary`` is its ``historical_data_summary``; build an entry of
    ``previous_actions`` with :func:`previous_action`);
``instructions``
    the ``instructions`` object (``next_steps_suggestion``, ``required_actions``, ...).

``summary`` is a data field of STATUS_UPDATE (what happened since the last update): for
:func:`status_update` it sets that field. The other builders still take ``summary=`` as the
old name of ``history_summary`` and warn (``DeprecationWarning``).

The examples publish through two clients of the hub that ``python/README.md`` sets up (its
``pool.toml``): ``triage``, which may send to the pool ``tech_pool``, and ``tech``, which reads
that pool and may send to ``triage``:

>>> from chorus import handoff
>>> from chorus.hub import Hub
>>> triage = Hub("http://127.0.0.1:7700", token="triage-readme-token")
>>> tech = Hub("http://127.0.0.1:7700", token="tech-readme-token")
>>> escalated = handoff.escalation(
...     "triage", "tech_pool", issue_category="NETWORK_CONNECTIVITY", severity="HIGH",
...     customer_info={"user_id": "ann@example.com", "name": "Ann"},
...     technical_details={"router_model": "RouterX-Pro", "isp": "GlobalNet"})
>>> triage.publish(escalated)["queues"]
['tech_pool']
"""

from __future__ import annotations

import datetime
import uuid
import warnings
from typing import TYPE_CHECKING, Any, Dict, Literal, Mapping, Optional, Sequence, TypedDict, Union

if TYPE_CHECKING:  # annotations only (never evaluated at run time: no dependency)
    from typing_extensions import Unpack

__all__ = [
    "PROTOCOL_VERSION",
    "CustomerInfo",
    "Envelope",
    "EnvelopeOptions",
    "Priority",
    "TaskStatus",
    "approval_request",
    "escalation",
    "handoff",
    "notification",
    "previous_action",
    "provide_information",
    "request_information",
    "status_update",
    "task_transfer",
]

PROTOCOL_VERSION = "1.0.0"
"""The seed-003 protocol version the builders write."""

Recipients = Union[str, Sequence[str]]
"""One agent or pool, or a list of them."""

Priority = Literal["LOW", "MEDIUM", "HIGH", "CRITICAL"]
"""``metadata.priority``, an escalation's ``severity`` and an approval's ``risk_level``."""

TaskStatus = Literal["RECEIVED", "IN_PROGRESS", "BLOCKED", "COMPLETED", "FAILED"]
"""A STATUS_UPDATE's ``status``."""

Time = Union[str, datetime.datetime]
"""An ISO 8601 time, or an aware :class:`datetime.datetime` (written in UTC, milliseconds)."""


class _CustomerInfoRequired(TypedDict):
    user_id: str
    name: str


class CustomerInfo(_CustomerInfoRequired, total=False):
    """An escalation's ``customer_info``: ``user_id`` and ``name`` required, no other keys but
    ``contact_number``."""

    contact_number: str


class EnvelopeOptions(TypedDict, total=False):
    """The envelope's options, the same for every builder (see the module's documentation)."""

    task_id: Optional[str]
    priority: Priority
    workflow_state: str
    previous_actions: Sequence[Mapping[str, Any]]
    history_summary: Optional[str]
    user_interaction_history: Optional[Sequence[Mapping[str, Any]]]
    instructions: Optional[Mapping[str, Any]]
    correlation_id: Optional[str]
    expiration_time: Optional[Time]
    message_id: Optional[str]


class Envelope(EnvelopeOptions, total=False):
    """:class:`EnvelopeOptions` with ``summary``, the deprecated name of ``history_summary``
    (for every builder but :func:`status_update`, where ``summary`` is a data field)."""

    summary: Optional[str]


def _time(moment: Time) -> str:
    if isinstance(moment, str):
        return moment
    if moment.tzinfo is None:
        raise ValueError(f"expected an aware datetime (with a time zone), found {moment!r}")
    moment = moment.astimezone(datetime.timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _now() -> str:
    return _time(datetime.datetime.now(datetime.timezone.utc))


def previous_action(action_type: str, details: str, timestamp: Optional[Time] = None,
                    **more: Any) -> Dict[str, Any]:
    """One entry of ``previous_actions``: what the sender did, and when (now by default).

    >>> action = handoff.previous_action("DIAGNOSTIC_ATTEMPT", "Restarted the router.")
    >>> sorted(action), action["timestamp"].endswith("Z")
    (['action_type', 'details', 'timestamp'], True)
    """
    return {"action_type": action_type, "details": details,
            "timestamp": _now() if timestamp is None else _time(timestamp), **more}


def _data(required: Dict[str, Any], optional: Dict[str, Any],
          extra: Optional[Mapping[str, Any]]) -> Dict[str, Any]:
    data = dict(required)
    data.update((key, value) for key, value in optional.items() if value is not None)
    for key, value in (extra or {}).items():
        if key in data:
            raise TypeError(f"extra={{{key!r}: ...}} repeats the data field {key!r}; "
                            f"pass it once")
        data[key] = value
    return data


def _history(history_summary: Optional[str], summary: Optional[str]) -> Optional[str]:
    if summary is None:
        return history_summary
    warnings.warn("summary= is the context's historical_data_summary here: pass "
                  "history_summary= instead (summary= is a data field of STATUS_UPDATE only)",
                  DeprecationWarning, stacklevel=4)
    if history_summary is not None:
        raise TypeError("pass history_summary= alone, not with summary=")
    return summary


def handoff(
    handoff_type: str,
    sender: str,
    recipient: Recipients,
    data: Mapping[str, Any],
    **envelope: Unpack[Envelope],
) -> Dict[str, Any]:
    """A handoff of any type from ``sender`` to ``recipient`` carrying ``data`` as given (the
    typed builders below check the field names for you). ``summary`` is the deprecated name of
    ``history_summary``.

    >>> document = handoff.handoff(
    ...     "NOTIFICATION", "triage", "tech_pool",
    ...     {"event_type": "SHIFT_STARTED", "message": "Triage is staffed until 18:00."},
    ...     priority="LOW", workflow_state="INFORMED",
    ...     history_summary="The morning queue was empty.")
    >>> document["context"]["historical_data_summary"]
    'The morning queue was empty.'
    >>> triage.publish(document)["queues"]
    ['tech_pool']
    """
    return _build(handoff_type, sender, recipient, data, _options(envelope, Envelope, "handoff"))


def _options(envelope: Mapping[str, Any], allowed: Any, builder: str) -> Dict[str, Any]:
    """The envelope options a builder was given, checked against the keys of `allowed` (a
    TypedDict: type checkers see them, and this refuses the rest at run time), with the old
    ``summary=`` turned into ``history_summary`` (and a warning at the caller's line)."""
    known = allowed.__required_keys__ | allowed.__optional_keys__
    for key in envelope:
        if key not in known:
            raise TypeError(f"{builder}() got an unexpected keyword argument {key!r}")
    options = dict(envelope)
    options["history_summary"] = _history(options.get("history_summary"),
                                           options.pop("summary", None))
    return options


def _build(handoff_type: str, sender: str, recipient: Recipients, data: Mapping[str, Any],
           options: Mapping[str, Any]) -> Dict[str, Any]:
    """The document: the envelope filled in from `options` (see :class:`EnvelopeOptions`)."""
    metadata: Dict[str, Any] = {
        "message_id": options.get("message_id") or str(uuid.uuid4()),
        "timestamp": _now(),
        "protocol_version": PROTOCOL_VERSION,
        "sender_id": sender,
        "recipient_id": recipient if isinstance(recipient, str) else list(recipient),
        "task_id": options.get("task_id") or f"task-{uuid.uuid4()}",
        "priority": options.get("priority", "MEDIUM"),
    }
    if options.get("correlation_id") is not None:
        metadata["correlation_id"] = options["correlation_id"]
    if options.get("expiration_time") is not None:
        metadata["expiration_time"] = _time(options["expiration_time"])
    context: Dict[str, Any] = {
        "workflow_state": options.get("workflow_state", "HANDED_OFF"),
        "previous_actions": [dict(a) for a in options.get("previous_actions", ())],
    }
    if options.get("history_summary") is not None:
        context["historical_data_summary"] = options["history_summary"]
    if options.get("user_interaction_history") is not None:
        context["user_interaction_history"] = [dict(i) for i in options["user_interaction_history"]]
    return {
        "metadata": metadata,
        "context": context,
        "payload": {"handoff_type": handoff_type, "data": dict(data)},
        "instructions": dict(options.get("instructions") or {}),
    }


def task_transfer(
    sender: str,
    recipient: Recipients,
    task_description: str,
    *,
    status: Optional[str] = None,
    completed_steps: Optional[Sequence[str]] = None,
    next_immediate_step: Optional[str] = None,
    constraints: Optional[Sequence[str]] = None,
    artifacts: Optional[Mapping[str, str]] = None,
    deliverables: Optional[Sequence[str]] = None,
    deadline: Optional[Time] = None,
    extra: Optional[Mapping[str, Any]] = None,
    **envelope: Unpack[Envelope],
) -> Dict[str, Any]:
    """TASK_TRANSFER: the whole task moves to the recipient.

    >>> triage.publish(handoff.task_transfer(
    ...     "triage", "tech_pool", "Replace the customer's router",
    ...     status="in_progress", completed_steps=["Confirmed the address"],
    ...     next_immediate_step="Ship a RouterX-Pro 2", constraints=["Same-day shipping"],
    ...     artifacts={"order": "https://shop.example.com/orders/4711"},
    ...     deliverables=["Tracking number"], deadline="2099-01-01T12:00:00.000Z"))["queues"]
    ['tech_pool']
    """
    data = _data({"task_description": task_description},
                 {"status": status,
                  "completed_steps": None if completed_steps is None else list(completed_steps),
                  "next_immediate_step": next_immediate_step,
                  "constraints": None if constraints is None else list(constraints),
                  "artifacts": None if artifacts is None else dict(artifacts),
                  "deliverables": None if deliverables is None else list(deliverables),
                  "deadline": None if deadline is None else _time(deadline)},
                 extra)
    return _build("TASK_TRANSFER", sender, recipient, data, _options(envelope, Envelope, "task_transfer"))


def request_information(
    sender: str,
    recipient: Recipients,
    requested_info_keys: Sequence[str],
    *,
    query_parameters: Optional[Mapping[str, Any]] = None,
    extra: Optional[Mapping[str, Any]] = None,
    **envelope: Unpack[Envelope],
) -> Dict[str, Any]:
    """REQUEST_INFORMATION: the sender needs these pieces of information.

    >>> tech.publish(handoff.request_information(
    ...     "tech", "triage", ["modem_logs", "outage_times"],
    ...     query_parameters={"period": "last 48 hours"},
    ...     workflow_state="WAITING_FOR_INFORMATION"))["queues"]
    ['triage']
    """
    data = _data({"requested_info_keys": list(requested_info_keys)},
                 {"query_parameters": None if query_parameters is None else dict(query_parameters)},
                 extra)
    return _build("REQUEST_INFORMATION", sender, recipient, data, _options(envelope, Envelope, "request_information"))


def provide_information(
    sender: str,
    recipient: Recipients,
    provided_info: Mapping[str, Any],
    *,
    in_response_to: Optional[str] = None,
    missing_keys: Optional[Sequence[str]] = None,
    extra: Optional[Mapping[str, Any]] = None,
    **envelope: Unpack[Envelope],
) -> Dict[str, Any]:
    """PROVIDE_INFORMATION: information asked for (``in_response_to`` the ``message_id`` of the
    REQUEST_INFORMATION) or shared unasked.

    >>> triage.publish(handoff.provide_information(
    ...     "triage", "tech_pool", {"modem_logs": "log_file_id_123"},
    ...     in_response_to="5b0e8f52-7f1c-4a0e-9b7d-2f4a8c6e1d30",
    ...     missing_keys=["outage_times"], workflow_state="INFORMATION_PROVIDED"))["queues"]
    ['tech_pool']
    """
    data = _data({"provided_info": dict(provided_info)},
                 {"in_response_to": in_response_to,
                  "missing_keys": None if missing_keys is None else list(missing_keys)},
                 extra)
    return _build("PROVIDE_INFORMATION", sender, recipient, data, _options(envelope, Envelope, "provide_information"))


def escalation(
    sender: str,
    recipient: Recipients,
    issue_category: str,
    severity: Priority,
    customer_info: CustomerInfo,
    technical_details: Mapping[str, Any],
    *,
    extra: Optional[Mapping[str, Any]] = None,
    **envelope: Unpack[Envelope],
) -> Dict[str, Any]:
    """ESCALATION: the sender cannot handle the issue. ``customer_info`` needs ``user_id`` and
    ``name`` (and may have ``contact_number``, nothing else); ``technical_details`` takes any
    keys (``router_model``, ``isp``, ``symptoms``, ``logs_attached``, ``log_references``, ...).

    >>> triage.publish(handoff.escalation(
    ...     "triage", "tech_pool", issue_category="NETWORK_CONNECTIVITY", severity="CRITICAL",
    ...     customer_info={"user_id": "john@example.com", "name": "John Doe",
    ...                    "contact_number": "+1-555-123-4567"},
    ...     technical_details={"symptoms": "Drops every hour", "logs_attached": False},
    ...     priority="HIGH", workflow_state="CUSTOMER_ISSUE_ESCALATED",
    ...     previous_actions=[handoff.previous_action("DIAGNOSTIC_ATTEMPT",
    ...                                               "The customer restarted the router.")],
    ...     history_summary="John's connection drops every hour since Monday.",
    ...     instructions={"required_actions": ["DIAGNOSE_ROOT_CAUSE"],
    ...                   "failure_handling_strategy": {"retry_count": 2}},
    ...     expiration_time="2099-01-01T12:00:00.000Z"))["queues"]
    ['tech_pool']
    """
    data = _data({"issue_category": issue_category, "severity": severity,
                  "customer_info": dict(customer_info),
                  "technical_details": dict(technical_details)}, {}, extra)
    return _build("ESCALATION", sender, recipient, data, _options(envelope, Envelope, "escalation"))


def notification(
    sender: str,
    recipient: Recipients,
    event_type: str,
    message: str,
    *,
    details: Optional[Mapping[str, Any]] = None,
    extra: Optional[Mapping[str, Any]] = None,
    **envelope: Unpack[Envelope],
) -> Dict[str, Any]:
    """NOTIFICATION: an event happened; nothing is asked.

    >>> tech.publish(handoff.notification(
    ...     "tech", "triage", "MAINTENANCE_SCHEDULED", "GlobalNet maintenance tonight",
    ...     details={"from": "22:00", "to": "23:00"}))["queues"]
    ['triage']
    """
    data = _data({"event_type": event_type, "message": message},
                 {"details": None if details is None else dict(details)}, extra)
    return _build("NOTIFICATION", sender, recipient, data, _options(envelope, Envelope, "notification"))


def status_update(
    sender: str,
    recipient: Recipients,
    status: TaskStatus,
    *,
    progress_percent: Optional[int] = None,
    summary: Optional[str] = None,
    blocked_on: Optional[str] = None,
    in_response_to: Optional[str] = None,
    extra: Optional[Mapping[str, Any]] = None,
    **envelope: Unpack[EnvelopeOptions],
) -> Dict[str, Any]:
    """STATUS_UPDATE: progress of a task, usually sent back to whoever handed it over
    (``in_response_to`` the ``message_id`` of that handoff). ``summary`` is the update's own
    data field (what happened since the last update); the context's summary is
    ``history_summary``.

    >>> update = handoff.status_update(
    ...     "tech", "triage", "COMPLETED", progress_percent=100,
    ...     summary="Firmware 2.3 fixed the hourly drops.",
    ...     in_response_to="5b0e8f52-7f1c-4a0e-9b7d-2f4a8c6e1d30", workflow_state="RESOLVED")
    >>> update["payload"]["data"]["summary"]
    'Firmware 2.3 fixed the hourly drops.'
    >>> tech.publish(update)["queues"]
    ['triage']
    """
    data = _data({"status": status},
                 {"progress_percent": progress_percent, "summary": summary,
                  "blocked_on": blocked_on, "in_response_to": in_response_to},
                 extra)
    return _build("STATUS_UPDATE", sender, recipient, data, _options(envelope, EnvelopeOptions, "status_update"))


def approval_request(
    sender: str,
    recipient: Recipients,
    action: str,
    reason: str,
    *,
    risk_level: Optional[Priority] = None,
    details: Optional[Mapping[str, Any]] = None,
    approvers: Optional[Sequence[str]] = None,
    extra: Optional[Mapping[str, Any]] = None,
    **envelope: Unpack[Envelope],
) -> Dict[str, Any]:
    """APPROVAL_REQUEST: the sender needs a yes or no before acting.

    >>> tech.publish(handoff.approval_request(
    ...     "tech", "triage", "REFUND_CUSTOMER", "Two days without service",
    ...     risk_level="LOW", details={"amount_eur": 20}, approvers=["triage"]))["queues"]
    ['triage']
    """
    data = _data({"action": action, "reason": reason},
                 {"risk_level": risk_level,
                  "details": None if details is None else dict(details),
                  "approvers": None if approvers is None else list(approvers)},
                 extra)
    return _build("APPROVAL_REQUEST", sender, recipient, data, _options(envelope, Envelope, "approval_request"))
