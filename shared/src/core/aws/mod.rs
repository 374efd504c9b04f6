//! Requests to AWS signed with the function's own credentials (SigV4), for the calls made
//! without an SDK client: the app's tools behind IAM, Secrets Manager's `GetSecretValue` and
//! the backfill's S3 `GetObject`.

pub mod s3;

use std::time::SystemTime;

use aws_credential_types::provider::SharedCredentialsProvider;

/// Signs requests with one set of credentials: the default chain's (in Lambda, the role's,
/// from the environment), found on the first signed request, or those given.
#[derive(Default)]
pub struct Signer {
    credentials: tokio::sync::OnceCell<Option<SharedCredentialsProvider>>,
}

impl Signer {
    /// A signer with `credentials` instead of the default chain's (a role assumed elsewhere; tests).
    pub fn with(credentials: SharedCredentialsProvider) -> Self {
        Self { credentials: tokio::sync::OnceCell::from(Some(credentials)) }
    }

    /// The SigV4 headers (`authorization`, `x-amz-date`, `x-amz-security-token`; for `s3`,
    /// `x-amz-content-sha256`) of a `method` request of `body` with `headers` to `url`, for
    /// `service` in `region`.
    pub async fn headers(
        &self,
        method: &str,
        url: &str,
        service: &str,
        region: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Result<Vec<(String, String)>, String> {
        use aws_credential_types::provider::ProvideCredentials;
        use aws_sigv4::http_request::{
            PayloadChecksumKind, PercentEncodingMode, SignableBody, SignableRequest, SigningSettings,
            UriPathNormalizationMode, sign,
        };
        let provider = self
            .credentials
            .get_or_init(|| async {
                aws_config::defaults(aws_config::BehaviorVersion::latest()).load().await.credentials_provider()
            })
            .await
            .as_ref()
            .ok_or("no AWS credentials provider")?;
        let credentials = provider.provide_credentials().await.map_err(|e| format!("no AWS credentials: {e}"))?;
        let identity = aws_smithy_runtime_api::client::identity::Identity::from(credentials);
        let mut settings = SigningSettings::default();
        if service == "s3" {
            // S3's own rules: the payload's hash in a header, the path signed as it is sent.
            settings.payload_checksum_kind = PayloadChecksumKind::XAmzSha256;
            settings.percent_encoding_mode = PercentEncodingMode::Single;
            settings.uri_path_normalization_mode = UriPathNormalizationMode::Disabled;
        }
        let params = aws_sigv4::sign::v4::SigningParams::builder()
            .identity(&identity)
            .region(region)
            .name(service)
            .time(SystemTime::now())
            .settings(settings)
            .build()
            .map_err(|e| e.to_string())?
            .into();
        let signable = SignableRequest::new(method, url, headers.iter().copied(), SignableBody::Bytes(body))
            .map_err(|e| e.to_string())?;
        let (instructions, _) = sign(signable, &params).map_err(|e| e.to_string())?.into_parts();
        Ok(instructions.headers().map(|(k, v)| (k.to_owned(), v.to_owned())).collect())
    }
}
