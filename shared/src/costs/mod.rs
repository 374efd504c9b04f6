//! What every paid call cost: the one ledger all calls are accounted through (and held against
//! the agents' daily budgets), the price table
//! (`prices.json`, overridable), and the cost report (text and HTML). Served by `cost-report`
//! (with the usage apps report for their own calls); written by every function that calls a
//! paid upstream.

pub mod budget;
pub mod ledger;
pub mod pricing;
pub mod quota;
pub mod record;
pub mod report;
pub mod rollup;
pub mod settings;
pub mod usage;
