//! The research node of a content pipeline (seed 001), served by the `search` function's
//! `POST /research`: prompts, the Codex CLI provider (or the web search chain), output parsing
//! and the topic history that keeps runs from repeating themselves.

pub mod codex;
pub mod research_node;
pub mod topics;
