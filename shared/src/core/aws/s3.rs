//! S3's `GetObject`, signed with the function's credentials ([`Signer`]): the backfill's
//! imports of `s3://bucket/key`. Each read is retried on S3's 5xx and network failures, bounded
//! in time ([`S3_READ_TIMEOUT`]) and size ([`S3_MAX_BYTES`]).

use std::time::Duration;

use super::Signer;
use crate::core::error::{Error, Result};
use crate::core::retry::{RetryPolicy, Retryable, with_backoff};

/// Reads S3 objects for `s3://` sources: `GetObject`, signed with [`Signer`]; each read
/// within [`S3_READ_TIMEOUT`].
pub struct Objects {
    /// An S3-compatible endpoint, addressed path-style; `None`: AWS's own, by region.
    endpoint: Option<String>,
    region: String,
    signer: Signer,
    /// The account that must own the bucket (`S3_EXPECTED_BUCKET_OWNER`, sent as
    /// `x-amz-expected-bucket-owner`): a bucket of the same name in another account (deleted,
    /// then taken) is refused by S3 (403), not read.
    owner: Option<String>,
}

/// The most one read of an import's S3 object may take (the job's own time is 15 minutes).
pub const S3_READ_TIMEOUT: Duration = Duration::from_secs(120);

impl Objects {
    /// A reader from the standard AWS environment: `AWS_REGION` (or `AWS_DEFAULT_REGION`,
    /// else us-east-1), `AWS_ENDPOINT_URL_S3` (or `AWS_ENDPOINT_URL`: https, or http on a
    /// loopback host), `S3_EXPECTED_BUCKET_OWNER`, the default credentials.
    pub fn from_env() -> Result<Self> {
        fn var(name: &'static str) -> Option<(&'static str, String)> {
            std::env::var(name).ok().filter(|v| !v.is_empty()).map(|v| (name, v))
        }
        let endpoint = match var("AWS_ENDPOINT_URL_S3").or_else(|| var("AWS_ENDPOINT_URL")) {
            Some((name, value)) => Some(crate::core::validate::endpoint(name, &value)?),
            None => None,
        };
        let owner = var("S3_EXPECTED_BUCKET_OWNER").map(|(_, v)| v);
        if owner.as_ref().is_some_and(|o| o.len() != 12 || !o.bytes().all(|b| b.is_ascii_digit())) {
            return Err(Error::Config("S3_EXPECTED_BUCKET_OWNER must be a 12-digit AWS account id".into()));
        }
        Ok(Self {
            endpoint,
            region: var("AWS_REGION")
                .or_else(|| var("AWS_DEFAULT_REGION"))
                .map_or_else(|| "us-east-1".into(), |(_, v)| v),
            signer: Signer::default(),
            owner,
        })
    }

    /// A reader of an S3-compatible endpoint with fixed credentials (local stacks, tests).
    pub fn local(endpoint: &str) -> Self {
        let credentials = aws_credential_types::Credentials::new("local", "local", None, None, "local");
        Self {
            endpoint: Some(endpoint.to_owned()),
            region: "us-east-1".into(),
            signer: Signer::with(aws_credential_types::provider::SharedCredentialsProvider::new(credentials)),
            owner: None,
        }
    }

    /// The same reader, reading only buckets `account` owns.
    pub fn owned_by(mut self, account: &str) -> Self {
        self.owner = Some(account.to_owned());
        self
    }

    /// `bucket`'s object `key` as text: a name S3 could not have is refused unsent (400); a
    /// failure of S3 or the network is tried [`S3_ATTEMPTS`] times ([`with_backoff`]), then a 503.
    pub async fn get(&self, bucket: &str, key: &str) -> Result<String> {
        let fail = |e: &dyn std::fmt::Display| Error::invalid("invalid_source", format!("s3://{bucket}/{key}: {e}"));
        let named = (3..=63).contains(&bucket.len())
            && bucket.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'.' || b == b'-')
            && bucket.starts_with(|c: char| c.is_ascii_alphanumeric())
            && bucket.ends_with(|c: char| c.is_ascii_alphanumeric())
            && !bucket.contains("..");
        if !named {
            return Err(fail(&"not an S3 bucket name"));
        }
        // A `.` or `..` segment would be collapsed by the URL after it was signed.
        if key.split('/').any(|segment| segment == "." || segment == "..") {
            return Err(fail(&"a key with a `.` or `..` segment cannot be read"));
        }
        let path: String = key.split('/').map(encode).collect::<Vec<_>>().join("/");
        let url = match &self.endpoint {
            Some(endpoint) => format!("{}/{bucket}/{path}", endpoint.trim_end_matches('/')),
            // Virtual-hosted, unless a dot in the name would not match the TLS certificate.
            None if bucket.contains('.') => {
                format!("https://s3.{}.{}/{bucket}/{path}", self.region, aws_domain(&self.region))
            }
            None => format!("https://{bucket}.s3.{}.{}/{path}", self.region, aws_domain(&self.region)),
        };
        // What fails on our side (the client, the credentials) is ours to answer: a 503.
        let ours = |e: &dyn std::fmt::Display| Error::Upstream(format!("s3://{bucket}/{key}: {e}"));
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .timeout(S3_READ_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| ours(&e))?;
        let read = with_backoff(S3_RETRY, "s3", |_| async {
            let owner: Vec<(&str, &str)> =
                self.owner.iter().map(|o| ("x-amz-expected-bucket-owner", o.as_str())).collect();
            let signed = self
                .signer
                .headers("GET", &url, "s3", &self.region, &owner, b"")
                .await
                .map_err(|e| Read::Final(ours(&e)))?;
            let mut request = client.get(&url);
            for (name, value) in owner.iter().map(|(n, v)| ((*n).to_owned(), (*v).to_owned())).chain(signed) {
                request = request.header(name, value);
            }
            let mut response = request.send().await.map_err(|e| Read::Again(causes(&e.without_url())))?;
            let status = response.status();
            let too_large = |size: u64| {
                Read::Final(fail(&format!("{size} bytes or more, more than an import reads ({S3_MAX_BYTES})")))
            };
            if let Some(size) = response.content_length().filter(|n| *n > S3_MAX_BYTES) {
                return Err(too_large(size));
            }
            // A bucket in another region answers 301 and names its own.
            let region = response.headers().get("x-amz-bucket-region").and_then(|v| v.to_str().ok()).map(str::to_owned);
            // Read chunk by chunk into one buffer: the cap holds without a Content-Length, and
            // the object is held once.
            let mut body = Vec::with_capacity(response.content_length().unwrap_or(0) as usize);
            loop {
                match response.chunk().await {
                    Ok(Some(chunk)) if (body.len() + chunk.len()) as u64 > S3_MAX_BYTES => {
                        return Err(too_large((body.len() + chunk.len()) as u64));
                    }
                    Ok(Some(chunk)) => body.extend_from_slice(&chunk),
                    Ok(None) => break,
                    // A refusal whose body broke is still a refusal; only S3's own failures are
                    // read again.
                    Err(_) if !status.is_success() && !status.is_server_error() => {
                        return Err(Read::Final(fail(&status)));
                    }
                    Err(e) => return Err(Read::Again(causes(&e.without_url()))),
                }
            }
            if status.is_success() {
                return String::from_utf8(body).map_err(|e| Read::Final(fail(&e)));
            }
            // S3's error document: <Error><Code>NoSuchKey</Code><Message>...</Message></Error>.
            let text = String::from_utf8_lossy(&body);
            let tag = |t: &str| {
                let open = format!("<{t}>");
                text.split_once(open.as_str()).and_then(|(_, rest)| rest.split_once("</")).map(|(v, _)| v.to_owned())
            };
            let mut said =
                format!("{status} {} {}", tag("Code").unwrap_or_default(), tag("Message").unwrap_or_default());
            if let Some(region) = region.filter(|r| *r != self.region) {
                said.push_str(&format!(" (the bucket is in {region}; this reads {})", self.region));
            }
            Err(if status.is_server_error() { Read::Again(said) } else { Read::Final(fail(&said.trim_end())) })
        })
        .await;
        read.map_err(|failed| match failed {
            Read::Final(e) => e,
            Read::Again(last) => {
                Error::Upstream(format!("s3://{bucket}/{key}: S3 failed {S3_ATTEMPTS} times: {}", last.trim_end()))
            }
        })
    }
}

/// How one read of an S3 object failed: for good (the error to answer), or in a way another
/// attempt may mend (S3's 5xx, the network: what happened).
enum Read {
    Final(Error),
    Again(String),
}

impl Retryable for Read {
    fn retry_after(&self) -> Option<Option<Duration>> {
        matches!(self, Read::Again(_)).then_some(None)
    }
}

impl std::fmt::Display for Read {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Read::Final(e) => write!(f, "{e}"),
            Read::Again(what) => f.write_str(what.trim_end()),
        }
    }
}

/// The retries of an S3 read ([`S3_ATTEMPTS`] attempts, 0.8 s then 1.6 s apart).
const S3_RETRY: RetryPolicy =
    RetryPolicy { retries: S3_ATTEMPTS - 1, base: Duration::from_millis(800), max_wait: Duration::from_secs(5) };

/// Reads of an object tried before the import gives up (S3's 5xx and network failures).
pub const S3_ATTEMPTS: u32 = 3;
/// The largest object an import reads: it is held in memory, with what is parsed from it, in
/// a function of 1024 MB (split a larger import into several objects).
pub const S3_MAX_BYTES: u64 = 128 << 20;

/// `e` and the errors under it, in words (a network failure's cause: refused, reset, DNS).
fn causes(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut under = e.source();
    while let Some(cause) = under {
        out.push_str(": ");
        out.push_str(&cause.to_string());
        under = cause.source();
    }
    out
}

/// The DNS suffix of AWS's endpoints in `region`'s partition.
fn aws_domain(region: &str) -> &'static str {
    if region.starts_with("cn-") { "amazonaws.com.cn" } else { "amazonaws.com" }
}

/// A key's path segment as S3 signs it: unreserved bytes kept, every other byte `%XX`.
fn encode(segment: &str) -> String {
    segment
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}
