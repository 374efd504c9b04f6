//! What every capability stands on, and nothing else: errors, configuration and its secrets,
//! signed AWS requests, clock, retries, the per-user request limit's port, an invocation's deadline and time budgets, text
//! helpers, the upstream HTTP client with its usage and failure types, the record store port
//! with its SQLite and DynamoDB adapters, and CloudWatch EMF metrics. Depends on no capability.

pub mod aws;
pub mod background;
pub mod clock;
pub mod config;
pub mod deadline;
pub mod error;
pub mod json;
pub mod limit;
pub mod metrics;
pub mod records;
pub mod retry;
pub mod script;
pub mod secrets;
pub mod time;
pub mod upstream;
pub mod validate;
