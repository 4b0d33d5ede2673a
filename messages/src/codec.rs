//! Encoding and decoding: MessagePack with named fields, or JSON when the payload starts with `{`.
//!
//! Decoding never panics. Every failure is a [`CodecError`] that converts into a typed [`ErrorResponse`].

use serde::{
    Deserialize, Serialize,
    de::{DeserializeOwned, DeserializeSeed},
};

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

/// Parses `bytes` with `seed` (a type's own `Deserialize` is the seed `PhantomData<T>`). JSON must end where the
/// value does, as `serde_json::from_slice` requires; MessagePack, as `rmp_serde::from_slice`, need not.
fn parse_seeded<'de, S: DeserializeSeed<'de>>(
    bytes: &'de [u8],
    encoding: Encoding,
    seed: S,
) -> Result<S::Value, CodecError> {
    let result = match encoding {
        Encoding::MsgPack => {
            seed.deserialize(&mut rmp_serde::Deserializer::from_read_ref(bytes)).map_err(|e| e.to_string())
        }
        Encoding::Json => {
            let mut json = serde_json::Deserializer::from_slice(bytes);
            seed.deserialize(&mut json).and_then(|value| json.end().map(|()| value)).map_err(|e| e.to_string())
        }
    };
    result.map_err(|message| CodecError::Malformed { encoding, message })
}

/// Decodes a payload, detecting its encoding, and checks its schema version (top-level or in `envelope`).
pub fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<(T, Encoding), CodecError> {
    if bytes.len() > MAX_PAYLOAD_BYTES {
        return Err(CodecError::TooLarge { size: bytes.len(), limit: MAX_PAYLOAD_BYTES });
    }
    let encoding = Encoding::detect(bytes);
    if let Some(found) = probe::declared_version::<T>(bytes, encoding)
        && found != SCHEMA_VERSION
    {
        return Err(CodecError::UnsupportedVersion { found });
    }
    Ok((parse_seeded(bytes, encoding, std::marker::PhantomData::<T>)?, encoding))
}

#[cfg(test)]
mod hostile_tests;
mod probe;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod work_tests;
