//! A process of the budget tests: makes `attempts` holds of `worst` USD for agent `budgeted`
//! (daily cap `cap`) against the records table `table` of DynamoDB Local at `endpoint` (or the
//! SQLite store under `endpoint` when `table` is `-`), settles each to what it held, and prints
//! `admitted <n>`.
//!
//! Usage: `budget_worker <endpoint | data_dir> <table | -> <cap> <worst> <attempts>`

use std::sync::Arc;
use std::time::Duration;

use shared::core::clock::SystemClock;
use shared::core::records::{DynamoRecords, LocalRecords, RecordStore};
use shared::costs::budget::Budgets;
use shared::costs::settings::BudgetCaps;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, place, table, cap, worst, attempts] = args.as_slice() else {
        eprintln!("usage: budget_worker <endpoint | data_dir> <table | -> <cap> <worst> <attempts>");
        std::process::exit(2);
    };
    let records: Arc<dyn RecordStore> = if table == "-" {
        Arc::new(LocalRecords::open(std::path::Path::new(place)).expect("records"))
    } else {
        Arc::new(DynamoRecords::local(place, table.as_str()).await)
    };
    let caps = BudgetCaps::parse(&format!("budgeted={cap}")).expect("caps");
    // No outage allowance: a store error must show as a refusal, not as spend.
    let budgets = Budgets::new(caps, records, Arc::new(SystemClock), Duration::from_secs(10), 0.0);
    let worst: f64 = worst.parse().expect("worst is USD");
    let mut admitted = 0;
    for _ in 0..attempts.parse::<usize>().expect("attempts is a number") {
        if let Ok(hold) = budgets.hold("budgeted", worst).await {
            admitted += 1;
            budgets.settle(hold, worst).await;
        }
    }
    println!("admitted {admitted}");
}
