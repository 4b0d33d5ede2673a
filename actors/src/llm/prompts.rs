//! The agents' prompts: versioned files under `actors/prompts/`, compiled in. Changing a prompt means a new
//! file with a new version, so a trace's `planner_version` says which words the model saw.

/// Plans the whole request once (`PlannerState`, seed 003).
pub const PLAN: &str = include_str!("../../prompts/plan.v1.md");
/// Chooses one turn's step (`NextStep`): seed 000 §5's background and steps.
pub const STEP: &str = include_str!("../../prompts/step.v1.md");
/// Judges sufficiency (`SufficiencyReport`, seed 002 §6 reflect).
pub const REFLECT: &str = include_str!("../../prompts/reflect.v1.md");
/// Writes the cited answer (seed 002 §6 synthesize).
pub const SYNTHESIZE: &str = include_str!("../../prompts/synthesize.v3.md");
/// Chooses the short answer among those the evidence offers, and cites it (the synthesizer, when the reader
/// found candidates).
pub const READ: &str = include_str!("../../prompts/read.v1.md");
/// Rewrites a conversation's follow-up into a self-contained question (`QueryRewrite`, seed 001 §1).
pub const REWRITE: &str = include_str!("../../prompts/rewrite.v2.md");
/// Sent back with a rejected reply; `{{problem}}` is replaced by what was wrong.
pub const CORRECT: &str = include_str!("../../prompts/correct.v1.md");

/// Recorded as the plan's `planner_version`.
pub const VERSION: &str = "llm-prompts-v4";
