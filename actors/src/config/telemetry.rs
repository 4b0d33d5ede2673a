//! The `telemetry` section: where spans go (OTLP), how they are sampled, and where a serving process answers
//! `/metrics`, `/healthz` and `/readyz`. The standard `OTEL_*` variables are the fallbacks of these keys.

use serde::{Deserialize, Serialize};

/// The OTLP transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum OtlpProtocol {
    /// OTLP over gRPC (Jaeger and the collector listen on 4317).
    #[serde(rename = "grpc")]
    Grpc,
    /// OTLP over HTTP with protobuf bodies (port 4318, path `/v1/traces`).
    #[serde(rename = "http/protobuf")]
    HttpProtobuf,
}

impl OtlpProtocol {
    pub fn parse(s: &str) -> Option<OtlpProtocol> {
        match s.trim() {
            "grpc" => Some(OtlpProtocol::Grpc),
            "http/protobuf" | "http" => Some(OtlpProtocol::HttpProtobuf),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            OtlpProtocol::Grpc => "grpc",
            OtlpProtocol::HttpProtobuf => "http/protobuf",
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TelemetryConfig {
    /// OTLP endpoint, e.g. http://localhost:4317 (gRPC) or http://localhost:4318 (HTTP). Unset: no span leaves
    /// the process. Fallback: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, then `OTEL_EXPORTER_OTLP_ENDPOINT`.
    pub otlp_endpoint: Option<String>,
    /// `grpc` or `http/protobuf`. Fallback: `OTEL_EXPORTER_OTLP_PROTOCOL`; default grpc.
    pub otlp_protocol: Option<OtlpProtocol>,
    /// `service.name` of this process. Fallback: `OTEL_SERVICE_NAME`; default `sleuth-<stage>` for a process
    /// that serves one stage, `sleuth` otherwise.
    pub service_name: Option<String>,
    /// `always_on`, `always_off`, `traceidratio`, `parentbased_always_on`, `parentbased_always_off` or
    /// `parentbased_traceidratio`. Fallback: `OTEL_TRACES_SAMPLER`; default `parentbased_always_on`.
    pub sampler: Option<String>,
    /// The ratio of the `*traceidratio` samplers. Fallback: `OTEL_TRACES_SAMPLER_ARG`; default 1.0.
    pub sampler_arg: Option<f64>,
    /// Record prompts and completions on the `gen_ai` spans. Off by default: they may hold personal data.
    pub capture_content: bool,
    /// Where `sleuth serve` answers `/metrics`, `/healthz` and `/readyz`. Port 0 picks a free port (logged at
    /// start-up); containers set a fixed one, e.g. `0.0.0.0:9464`.
    pub http_addr: String,
}

impl Default for TelemetryConfig {
    fn default() -> Self {
        TelemetryConfig {
            otlp_endpoint: None,
            otlp_protocol: None,
            service_name: None,
            sampler: None,
            sampler_arg: None,
            capture_content: false,
            http_addr: "127.0.0.1:0".into(),
        }
    }
}

pub const SAMPLERS: [&str; 6] = [
    "always_on",
    "always_off",
    "traceidratio",
    "parentbased_always_on",
    "parentbased_always_off",
    "parentbased_traceidratio",
];

impl TelemetryConfig {
    /// Fills unset keys from the standard `OTEL_*` variables (read through `var`, so tests need no environment).
    pub fn with_otel_env(mut self, var: impl Fn(&str) -> Option<String>) -> TelemetryConfig {
        let non_empty = |name: &str| var(name).filter(|v| !v.trim().is_empty());
        if self.otlp_endpoint.is_none() {
            self.otlp_endpoint =
                non_empty("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").or_else(|| non_empty("OTEL_EXPORTER_OTLP_ENDPOINT"));
        }
        if self.otlp_protocol.is_none() {
            self.otlp_protocol = non_empty("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
                .or_else(|| non_empty("OTEL_EXPORTER_OTLP_PROTOCOL"))
                .and_then(|p| OtlpProtocol::parse(&p));
        }
        if self.service_name.is_none() {
            self.service_name = non_empty("OTEL_SERVICE_NAME");
        }
        if self.sampler.is_none() {
            self.sampler = non_empty("OTEL_TRACES_SAMPLER");
        }
        if self.sampler_arg.is_none() {
            self.sampler_arg = non_empty("OTEL_TRACES_SAMPLER_ARG").and_then(|a| a.trim().parse().ok());
        }
        self.otlp_endpoint = self.otlp_endpoint.filter(|e| !e.trim().is_empty());
        self
    }

    pub fn validate(&self) -> Result<(), String> {
        if let Some(endpoint) = &self.otlp_endpoint
            && !(endpoint.starts_with("http://") || endpoint.starts_with("https://"))
        {
            return Err(format!("telemetry.otlp_endpoint: {endpoint:?} must be an http:// or https:// URL"));
        }
        if let Some(sampler) = &self.sampler
            && !SAMPLERS.contains(&sampler.as_str())
        {
            return Err(format!("telemetry.sampler: {sampler:?} is not one of {}", SAMPLERS.join(", ")));
        }
        if self.sampler_arg.is_some_and(|a| !(0.0..=1.0).contains(&a)) {
            return Err("telemetry.sampler_arg: must be a ratio between 0 and 1".into());
        }
        if self.http_addr.parse::<std::net::SocketAddr>().is_err() {
            return Err(format!("telemetry.http_addr: {:?} is not an address like 0.0.0.0:9464", self.http_addr));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn otel_variables_fill_only_unset_keys() {
        let env = |name: &str| match name {
            "OTEL_EXPORTER_OTLP_ENDPOINT" => Some("http://collector:4317".to_string()),
            "OTEL_EXPORTER_OTLP_PROTOCOL" => Some("http/protobuf".to_string()),
            "OTEL_SERVICE_NAME" => Some("from-env".to_string()),
            "OTEL_TRACES_SAMPLER" => Some("traceidratio".to_string()),
            "OTEL_TRACES_SAMPLER_ARG" => Some("0.25".to_string()),
            _ => None,
        };
        let filled = TelemetryConfig::default().with_otel_env(env);
        assert_eq!(filled.otlp_endpoint.as_deref(), Some("http://collector:4317"));
        assert_eq!(filled.otlp_protocol, Some(OtlpProtocol::HttpProtobuf));
        assert_eq!(filled.service_name.as_deref(), Some("from-env"));
        assert_eq!((filled.sampler.as_deref(), filled.sampler_arg), (Some("traceidratio"), Some(0.25)));

        let own = TelemetryConfig { service_name: Some("mine".into()), ..Default::default() }.with_otel_env(env);
        assert_eq!(own.service_name.as_deref(), Some("mine"));
    }

    #[test]
    fn bad_values_name_their_key() {
        let bad = TelemetryConfig { sampler: Some("sometimes".into()), ..Default::default() };
        assert!(bad.validate().unwrap_err().starts_with("telemetry.sampler"));
        let bad = TelemetryConfig { otlp_endpoint: Some("localhost:4317".into()), ..Default::default() };
        assert!(bad.validate().unwrap_err().starts_with("telemetry.otlp_endpoint"));
        let bad = TelemetryConfig { http_addr: "nowhere".into(), ..Default::default() };
        assert!(bad.validate().unwrap_err().starts_with("telemetry.http_addr"));
    }
}
