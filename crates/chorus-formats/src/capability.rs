//! Capability tables: what each format carries.

use serde::Serialize;

/// What a format can carry, for people and for `chorus formats`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Capabilities {
    /// The format id.
    pub format: &'static str,
    /// What the format is.
    pub describes: &'static str,
    /// Roles it carries.
    pub roles: &'static [&'static str],
    /// chorus part types it carries natively.
    pub parts: &'static [&'static str],
    /// What a tool result can hold.
    pub tool_results: &'static str,
    /// Whether speaker names are carried, or the policy used instead.
    pub names: &'static str,
    /// How citations travel.
    pub citations: &'static str,
    /// How reasoning travels.
    pub reasoning: &'static str,
    /// Documented downgrades this encoder applies.
    pub downgrades: &'static [&'static str],
}

impl std::fmt::Display for Capabilities {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "{}: {}", self.format, self.describes)?;
        writeln!(f, "  roles:        {}", self.roles.join(", "))?;
        writeln!(f, "  parts:        {}", self.parts.join(", "))?;
        writeln!(f, "  tool results: {}", self.tool_results)?;
        writeln!(f, "  names:        {}", self.names)?;
        writeln!(f, "  citations:    {}", self.citations)?;
        writeln!(f, "  reasoning:    {}", self.reasoning)?;
        for downgrade in self.downgrades {
            writeln!(f, "  downgrade:    {downgrade}")?;
        }
        Ok(())
    }
}
