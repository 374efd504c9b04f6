//! The DynamoDB record store: one table, keys `pk` (S) and `sk` (S), TTL attribute
//! `expires_at` (N), the body as a native map attribute `body` (readable in the console).

use std::collections::HashMap;
use std::time::Duration;

use async_trait::async_trait;
use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::error::{DisplayErrorContext, SdkError};
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, AttributeValue, BillingMode, KeySchemaElement, KeyType, PutRequest, ReturnValue,
    ReturnValuesOnConditionCheckFailure, ScalarAttributeType, TimeToLiveSpecification, WriteRequest,
};

use super::{Record, RecordStore};
use crate::core::error::{Error, Result};
use item::{from_item, to_item};

mod item;

/// DynamoDB's limit of items per `BatchWriteItem`.
const BATCH: usize = 25;

/// The operation timeout of [`DynamoRecords::local`] (DynamoDB Local on a busy machine).
pub const LOCAL_TIMEOUT: Duration = Duration::from_secs(5);

/// The SDK's explicit bounds: connecting within a fifth of `timeout` (at most 1 s), the whole
/// operation within it, and the standard retry mode with two attempts, the retry waiting at most
/// a tenth of `timeout` (the SDK's default waits up to 1 s, which a 1 s operation bound cuts, so
/// a 500 after an applied counter update, whose retry the update's mark answers, would time out).
/// An attempt has the whole `timeout` too: a timed-out attempt is never sent again, since it may
/// have been applied (a counter's `add` twice). Without them a table that accepts connections and
/// never answers holds a request until Lambda ends it.
fn bounded(loader: aws_config::ConfigLoader, timeout: Duration) -> aws_config::ConfigLoader {
    let timeouts = aws_config::timeout::TimeoutConfig::builder()
        .connect_timeout((timeout / 5).min(Duration::from_secs(1)))
        .operation_attempt_timeout(timeout)
        .operation_timeout(timeout)
        .build();
    loader.timeout_config(timeouts).retry_config(
        aws_config::retry::RetryConfig::standard().with_max_attempts(2).with_initial_backoff(timeout / 10),
    )
}

/// The attribute of a conditionally put item that names the call that wrote it (not read back
/// into the record).
const PUT_TOKEN: &str = "put";

/// Records in a DynamoDB table.
#[derive(Clone, Debug)]
pub struct DynamoRecords {
    client: Client,
    table: String,
}

fn sdk_error<E: std::error::Error + 'static, R: std::fmt::Debug>(e: SdkError<E, R>) -> Error {
    Error::Store(format!("dynamodb: {}", DisplayErrorContext(e)))
}

impl DynamoRecords {
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self { client, table: table.into() }
    }

    /// Writes `record` only where `condition` holds (with its attribute `names` and `values`);
    /// true if written, false when the condition refused it. The item carries this call's token
    /// ([`PUT_TOKEN`]): when the SDK sends the put again after its answer was lost, the condition
    /// refuses the retry on the item the first attempt wrote, and the token says it was this call's
    /// (written: true), not another writer's.
    async fn put_where(
        &self,
        record: &Record,
        condition: &str,
        names: &[(&str, &str)],
        values: &[(&str, AttributeValue)],
    ) -> Result<bool> {
        let token = uuid::Uuid::new_v4().simple().to_string();
        let mut item = to_item(record);
        item.insert(PUT_TOKEN.to_owned(), AttributeValue::S(token.clone()));
        let mut put = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .condition_expression(condition)
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld);
        for (name, attribute) in names {
            put = put.expression_attribute_names(*name, *attribute);
        }
        for (name, value) in values {
            put = put.expression_attribute_values(*name, value.clone());
        }
        match put.send().await {
            Ok(_) => Ok(true),
            Err(e) => match e.as_service_error() {
                Some(PutItemError::ConditionalCheckFailedException(refused)) => {
                    let holder = refused.item().and_then(|old| old.get(PUT_TOKEN)).and_then(|t| t.as_s().ok());
                    Ok(holder == Some(&token))
                }
                _ => Err(sdk_error(e)),
            },
        }
    }

    /// Removes an update's mark from its counter once the update is done (its retries too), on a
    /// task of its own, so a counter's item stays small however many processes write it; a mark
    /// that cannot be removed (a fault, a frozen environment) stays, about 30 bytes.
    fn unmark(&self, pk: &str, sk: &str, attribute: String, token: String) {
        let remove = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("pk", AttributeValue::S(pk.to_owned()))
            .key("sk", AttributeValue::S(sk.to_owned()))
            .update_expression("REMOVE #o")
            .condition_expression("#o = :op")
            .expression_attribute_names("#o", attribute)
            .expression_attribute_values(":op", AttributeValue::S(token));
        crate::core::background::spawn(async move {
            if let Err(e) = remove.send().await
                && !e.as_service_error().is_some_and(|s| s.is_conditional_check_failed_exception())
            {
                tracing::debug!(error = %DisplayErrorContext(e), "a counter's update mark stays");
            }
        });
    }

    /// The raw item at `(pk, sk)`, read consistently.
    async fn item(&self, pk: &str, sk: &str) -> Result<Option<HashMap<String, AttributeValue>>> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .key("pk", AttributeValue::S(pk.to_owned()))
            .key("sk", AttributeValue::S(sk.to_owned()))
            .consistent_read(true)
            .send()
            .await
            .map_err(sdk_error)?;
        Ok(out.item)
    }

    /// Builds a client from the standard AWS environment (region, credentials,
    /// `AWS_ENDPOINT_URL_DYNAMODB`), each operation bounded by `timeout` (see [`bounded`]).
    pub async fn from_env(table: impl Into<String>, timeout: Duration) -> Self {
        let sdk = bounded(aws_config::defaults(aws_config::BehaviorVersion::latest()), timeout).load().await;
        Self::new(Client::new(&sdk), table)
    }

    /// A store on a DynamoDB Local at `endpoint` (fixed region, dummy credentials): for local
    /// stacks, tests and benches; operations bounded by [`LOCAL_TIMEOUT`].
    pub async fn local(endpoint: &str, table: impl Into<String>) -> Self {
        Self::at(endpoint, table, LOCAL_TIMEOUT).await
    }

    /// [`Self::local`] with operations bounded by `timeout`.
    pub async fn at(endpoint: &str, table: impl Into<String>, timeout: Duration) -> Self {
        let sdk = bounded(aws_config::defaults(aws_config::BehaviorVersion::latest()), timeout)
            .region(aws_config::Region::new("us-east-1"))
            .credentials_provider(aws_sdk_dynamodb::config::Credentials::new("local", "local", None, None, "local"))
            .endpoint_url(endpoint)
            .load()
            .await;
        Self::new(Client::new(&sdk), table)
    }

    /// Creates the table with the bundle's key schema and TTL on `expires_at`, as template.yaml
    /// declares it; for local stacks and tests. Does nothing if the table exists.
    pub async fn create_table(&self) -> Result<()> {
        let key = |name: &str, kind| {
            KeySchemaElement::builder().attribute_name(name).key_type(kind).build().expect("name and type set")
        };
        let attr = |name: &str| {
            AttributeDefinition::builder()
                .attribute_name(name)
                .attribute_type(ScalarAttributeType::S)
                .build()
                .expect("name and type set")
        };
        let created = self
            .client
            .create_table()
            .table_name(&self.table)
            .billing_mode(BillingMode::PayPerRequest)
            .key_schema(key("pk", KeyType::Hash))
            .key_schema(key("sk", KeyType::Range))
            .attribute_definitions(attr("pk"))
            .attribute_definitions(attr("sk"))
            .send()
            .await;
        match created {
            Ok(_) => {}
            Err(e) if e.as_service_error().is_some_and(|s| s.is_resource_in_use_exception()) => return Ok(()),
            Err(e) => return Err(sdk_error(e)),
        }
        self.client
            .update_time_to_live()
            .table_name(&self.table)
            .time_to_live_specification(
                TimeToLiveSpecification::builder()
                    .attribute_name("expires_at")
                    .enabled(true)
                    .build()
                    .expect("name and flag set"),
            )
            .send()
            .await
            .map_err(sdk_error)?;
        Ok(())
    }
}

impl DynamoRecords {
    /// A query of partition `pk` for sort keys in `from..=to`.
    fn range(
        &self,
        pk: &str,
        from: &str,
        to: &str,
    ) -> aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder {
        self.client
            .query()
            .table_name(&self.table)
            // Strongly consistent, like `get`: a reader sees every write acknowledged before its
            // read (the cost rollups' revision protocol relies on it).
            .consistent_read(true)
            .key_condition_expression("pk = :pk AND sk BETWEEN :from AND :to")
            .expression_attribute_values(":pk", AttributeValue::S(pk.to_owned()))
            .expression_attribute_values(":from", AttributeValue::S(from.to_owned()))
            .expression_attribute_values(":to", AttributeValue::S(to.to_owned()))
    }
}

#[async_trait]
impl RecordStore for DynamoRecords {
    async fn put(&self, record: &Record) -> Result<()> {
        self.client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(to_item(record)))
            .send()
            .await
            .map_err(sdk_error)?;
        Ok(())
    }

    async fn put_new(&self, record: &Record, now: i64) -> Result<bool> {
        let now = AttributeValue::N(now.to_string());
        self.put_where(record, "attribute_not_exists(pk) OR expires_at <= :now", &[], &[(":now", now)]).await
    }

    async fn put_if(&self, record: &Record, expected: Option<i64>, now: i64) -> Result<bool> {
        let Some(expected) = expected else { return self.put_new(record, now).await };
        // A record written before revisions is at revision 0.
        let condition = if expected == 0 {
            "(attribute_not_exists(#body.#rev) OR #body.#rev = :rev) AND (attribute_not_exists(expires_at) OR expires_at > :now)"
        } else {
            "#body.#rev = :rev AND (attribute_not_exists(expires_at) OR expires_at > :now)"
        };
        let names = [("#body", "body"), ("#rev", super::REV)];
        let values = [(":rev", AttributeValue::N(expected.to_string())), (":now", AttributeValue::N(now.to_string()))];
        self.put_where(record, condition, &names, &values).await
    }

    async fn put_all(&self, records: &[Record]) -> Result<()> {
        for chunk in records.chunks(BATCH) {
            let mut pending: Vec<WriteRequest> = chunk
                .iter()
                .map(|r| {
                    WriteRequest::builder()
                        .put_request(PutRequest::builder().set_item(Some(to_item(r))).build().expect("item set"))
                        .build()
                })
                .collect();
            // Unprocessed items (throttling) are retried with backoff; none is dropped.
            let mut attempt = 0u32;
            while !pending.is_empty() {
                if attempt > 0 {
                    if attempt > 8 {
                        return Err(Error::Store(format!(
                            "dynamodb left {} items unprocessed after {attempt} attempts",
                            pending.len()
                        )));
                    }
                    tokio::time::sleep(Duration::from_millis(50 << attempt.min(6))).await;
                }
                let out = self
                    .client
                    .batch_write_item()
                    .request_items(&self.table, pending)
                    .send()
                    .await
                    .map_err(sdk_error)?;
                pending = out.unprocessed_items.and_then(|mut m| m.remove(&self.table)).unwrap_or_default();
                attempt += 1;
            }
        }
        Ok(())
    }

    async fn get(&self, pk: &str, sk: &str, now: i64) -> Result<Option<Record>> {
        match self.item(pk, sk).await? {
            Some(item) => Ok(Some(from_item(&item)?).filter(|r| r.is_live(now))),
            None => Ok(None),
        }
    }

    async fn query(&self, pk: &str, from: &str, to: &str, now: i64) -> Result<Vec<Record>> {
        let mut records = Vec::new();
        let mut pages = self.range(pk, from, to).into_paginator().items().send();
        while let Some(item) = pages.next().await {
            let record = from_item(&item.map_err(sdk_error)?)?;
            if record.is_live(now) {
                records.push(record);
            }
        }
        Ok(records)
    }

    async fn latest(&self, pk: &str, from: &str, to: &str, limit: usize, now: i64) -> Result<Vec<Record>> {
        let out = self
            .range(pk, from, to)
            .scan_index_forward(false)
            .limit(i32::try_from(limit).unwrap_or(i32::MAX).max(1))
            .send()
            .await
            .map_err(sdk_error)?;
        let mut records = Vec::new();
        for item in out.items() {
            let record = from_item(item)?;
            if record.is_live(now) {
                records.push(record);
            }
        }
        Ok(records)
    }

    /// Idempotent under the SDK's retries: an update answered by a 500 or a reset after DynamoDB
    /// applied it is sent again, and would count twice. Each update marks the counter with its
    /// own token in an attribute of its [`Lane`], a name no other update uses while this one
    /// lives (its retries included); the mark is the condition, so a retry of an applied update
    /// is refused, seen as applied, and answered with the total.
    async fn add(&self, pk: &str, sk: &str, delta: i64, ceiling: Option<i64>, expires_at: i64) -> Result<Option<i64>> {
        let lane = Lane::take();
        let token = format!("{:016x}", uuid::Uuid::new_v4().as_u128() as u64);
        let once = "(attribute_not_exists(#o) OR #o <> :op)";
        let mut update = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("pk", AttributeValue::S(pk.to_owned()))
            .key("sk", AttributeValue::S(sk.to_owned()))
            .update_expression("SET #t = if_not_exists(#t, :zero) + :d, expires_at = :exp, #o = :op")
            .expression_attribute_names("#t", super::TOTAL)
            .expression_attribute_names("#o", lane.attribute())
            .expression_attribute_values(":zero", AttributeValue::N("0".into()))
            .expression_attribute_values(":d", AttributeValue::N(delta.to_string()))
            .expression_attribute_values(":exp", AttributeValue::N(expires_at.to_string()))
            .expression_attribute_values(":op", AttributeValue::S(token.clone()))
            .return_values(ReturnValue::UpdatedNew)
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld);
        update = match ceiling {
            Some(ceiling) => update
                .condition_expression(format!("(attribute_not_exists(#t) OR #t < :ceiling) AND {once}"))
                .expression_attribute_values(":ceiling", AttributeValue::N(ceiling.to_string())),
            None => update.condition_expression(once),
        };
        let total = |item: Option<&HashMap<String, AttributeValue>>| match item.and_then(|a| a.get(super::TOTAL)) {
            Some(AttributeValue::N(n)) => {
                n.parse().map(Some).map_err(|_| Error::Store(format!("counter {pk}/{sk} is not an integer: {n}")))
            }
            _ => Err(Error::Store(format!("dynamodb returned no total for counter {pk}/{sk}"))),
        };
        let sent = update.send().await;
        if !matches!(&sent, Err(e) if e.as_service_error().is_some_and(|s| s.is_conditional_check_failed_exception())) {
            self.unmark(pk, sk, lane.attribute(), token.clone());
        }
        match sent {
            Ok(out) => total(out.attributes.as_ref()),
            Err(e) => match e.into_service_error() {
                UpdateItemError::ConditionalCheckFailedException(refused) => {
                    let old = match refused.item {
                        Some(item) => item,
                        // A store that does not return the refused item: read it (the lane is
                        // still ours, so its mark cannot change meanwhile).
                        None => self.item(pk, sk).await?.unwrap_or_default(),
                    };
                    match old.get(&lane.attribute()) {
                        Some(AttributeValue::S(mark)) if *mark == token => {
                            self.unmark(pk, sk, lane.attribute(), token);
                            total(Some(&old))
                        }
                        _ => Ok(None),
                    }
                }
                e => Err(Error::Store(format!("dynamodb: {}", DisplayErrorContext(e)))),
            },
        }
    }
}

/// A name under which one counter update at a time marks a counter: this process's id and a
/// number, taken from a pool for the life of one update and given back after. The mark is
/// removed once the update is done ([`DynamoRecords::unmark`]), so a counter's item holds the
/// marks of the updates in flight, not one per process that ever wrote it.
struct Lane {
    number: u32,
}

/// This process's id and its free lanes.
static LANES: std::sync::LazyLock<(String, std::sync::Mutex<Vec<u32>>, std::sync::atomic::AtomicU32)> =
    std::sync::LazyLock::new(|| {
        let process = format!("{:08x}", uuid::Uuid::new_v4().as_u128() as u32);
        (process, std::sync::Mutex::new(Vec::new()), std::sync::atomic::AtomicU32::new(0))
    });

impl Lane {
    fn take() -> Self {
        let (_, free, next) = &*LANES;
        let reused = free.lock().unwrap_or_else(std::sync::PoisonError::into_inner).pop();
        Self { number: reused.unwrap_or_else(|| next.fetch_add(1, std::sync::atomic::Ordering::Relaxed)) }
    }

    fn attribute(&self) -> String {
        format!("op_{}_{}", LANES.0, self.number)
    }
}

impl Drop for Lane {
    fn drop(&mut self) {
        LANES.1.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(self.number);
    }
}
