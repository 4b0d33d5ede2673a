//! Encoding and decoding: MessagePack with named fields, or JSON when the payload starts with `{`.
//!
//! Decoding never panics. Every failure is a [`CodecError`] that converts into a typed [`ErrorResponse`].

use serde::{Deserialize, Serialize, de::DeserializeOwned};

use crate::{
    envelope::SCHEMA_VERSION,
    error::{ErrorKind, ErrorResponse},
};

/// Payloads above this size are refused before any parsing (NATS' own default max_payload is 1 MiB).
pub const MAX_PAYLOAD_BYTES: usize = 1024 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Encoding {
    MsgPack,
    Json,
}

impl Encoding {
    /// JSON if the first non-blank byte is `{`, MessagePack otherwise (a MessagePack map never starts with `{`).
    pub fn detect(bytes: &[u8]) -> Encoding {
        match bytes.iter().find(|b| !b.is_ascii_whitespace()) {
            Some(b'{') => Encoding::Json,
            _ => Encoding::MsgPack,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum CodecError {
    #[error("payload of {size} bytes exceeds the limit of {limit} bytes")]
    TooLarge { size: usize, limit: usize },
    #[error("malformed {encoding:?} payload: {message}")]
    Malformed { encoding: Encoding, message: String },
    #[error("unsupported schema version {found}, this build speaks {SCHEMA_VERSION}")]
    UnsupportedVersion { found: u16 },
    #[error("cannot encode payload: {0}")]
    Encode(String),
}

impl From<CodecError> for ErrorResponse {
    fn from(err: CodecError) -> ErrorResponse {
        let kind = match &err {
            CodecError::TooLarge { .. } => ErrorKind::TooLarge,
            CodecError::Malformed { .. } => ErrorKind::Malformed,
            CodecError::UnsupportedVersion { .. } => ErrorKind::UnsupportedVersion,
            CodecError::Encode(_) => ErrorKind::Internal,
        };
        ErrorResponse::new(kind, err.to_string())
    }
}

pub fn encode<T: Serialize>(value: &T, encoding: Encoding) -> Result<Vec<u8>, CodecError> {
    match encoding {
        Encoding::MsgPack => rmp_serde::to_vec_named(value).map_err(|e| CodecError::Encode(e.to_string())),
        Encoding::Json => serde_json::to_vec(value).map_err(|e| CodecError::Encode(e.to_string())),
    }
}

/// Only the version field, read before the full decode so a future shape is reported as a version problem.
#[derive(Deserialize)]
struct VersionProbe {
    #[serde(default)]
    schema_version: Option<u16>,
    #[serde(default)]
    envelope: Option<EnvelopeProbe>,
}

#[derive(Deserialize)]
struct EnvelopeProbe {
    #[serde(default)]
    schema_version: Option<u16>,
}

fn parse<T: DeserializeOwned>(bytes: &[u8], encoding: Encoding) -> Result<T, CodecError> {
    let result = match encoding {
        Encoding::MsgPack => rmp_serde::from_slice(bytes).map_err(|e| e.to_string()),
        Encoding::Json => serde_json::from_slice(bytes).map_err(|e| e.to_string()),
    };
    result.map_err(|message| CodecError::Malformed { encoding, message })
}

/// Decodes a payload, detecting its encoding, and checks its schema version (top-level or in `envelope`).
pub fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<(T, Encoding), CodecError> {
    if bytes.len() > MAX_PAYLOAD_BYTES {
        return Err(CodecError::TooLarge { size: bytes.len(), limit: MAX_PAYLOAD_BYTES });
    }
    let encoding = Encoding::detect(bytes);
    if let Ok(probe) = parse::<VersionProbe>(bytes, encoding) {
        let found = probe.schema_version.or(probe.envelope.and_then(|e| e.schema_version));
        if let Some(found) = found
            && found != SCHEMA_VERSION
        {
            return Err(CodecError::UnsupportedVersion { found });
        }
    }
    Ok((parse(bytes, encoding)?, encoding))
}

#[cfg(test)]
mod tests;
