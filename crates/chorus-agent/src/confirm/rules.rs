//! The transitions every store applies the same way: decide once, consume once, same arguments.

use super::{ConfirmError, Confirmation, ConfirmationState};

/// Records a person's decision on a pending confirmation.
pub(crate) fn decide(
    c: &mut Confirmation,
    approve: bool,
    by: &str,
    note: Option<String>,
) -> Result<(), ConfirmError> {
    if c.state != ConfirmationState::Pending {
        return Err(ConfirmError::WrongState {
            id: c.id.clone(),
            state: c.state,
            hint: "a confirmation is decided once; ask the agent to request a new one".into(),
        });
    }
    c.state = if approve {
        ConfirmationState::Approved
    } else {
        ConfirmationState::Rejected
    };
    c.decided_by = Some(by.to_owned());
    c.note = note;
    Ok(())
}

/// Uses an approval for the call with exactly `arguments`.
pub(crate) fn consume(c: &mut Confirmation, arguments: &str) -> Result<(), ConfirmError> {
    let hint = match c.state {
        ConfirmationState::Approved => {
            if c.arguments != arguments {
                return Err(ConfirmError::ArgumentsChanged(c.id.clone()));
            }
            c.state = ConfirmationState::Consumed;
            return Ok(());
        }
        ConfirmationState::Pending => "wait until a person approves it",
        ConfirmationState::Rejected => "a person refused this call; do not run the tool",
        ConfirmationState::Consumed => {
            "this approval was already used; request a new confirmation for another call"
        }
    };
    Err(ConfirmError::WrongState {
        id: c.id.clone(),
        state: c.state,
        hint: hint.into(),
    })
}
