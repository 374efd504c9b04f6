//! The research node of a content pipeline (seed 001), served by the `search` function's
//! `POST /research`: the request and its prompt, the node itself with the Codex CLI provider
//! (or the web search chain), output parsing, and the topic history that keeps runs from
//! repeating themselves.

pub mod codex;
pub mod output;
pub mod prompt;
pub mod research_node;
pub mod settings;
pub mod topics;
