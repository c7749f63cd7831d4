//! Role strings as providers write them, read into chorus roles.

use chorus_core::Role;

/// Every chorus role, in the order error messages list them.
pub const ALL: [Role; 5] = [
    Role::System,
    Role::Developer,
    Role::User,
    Role::Assistant,
    Role::Tool,
];

/// The role among `allowed` that is written `text`.
pub fn parse(text: &str, allowed: &[Role]) -> Option<Role> {
    allowed.iter().copied().find(|role| role.as_str() == text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_allowed_roles_are_read() {
        for role in ALL {
            assert_eq!(parse(role.as_str(), &ALL), Some(role));
        }
        assert_eq!(parse("tool", &[Role::User, Role::Assistant]), None);
        assert_eq!(parse("function", &ALL), None);
    }
}
