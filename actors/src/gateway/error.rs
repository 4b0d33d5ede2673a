//! [`ApiError`]: the protocol's `ErrorResponse` as an HTTP response, with the status code its kind calls for.

use axum::{
    Json,
    extract::rejection::{JsonRejection, PathRejection},
    http::{HeaderValue, StatusCode},
    response::{IntoResponse, Response},
};
use sleuth_messages::{ErrorKind, ErrorResponse};

/// An `ErrorResponse` and its HTTP status.
#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub body: ErrorResponse,
}

/// The HTTP status of an error the loop or intake returned.
fn status_of(kind: ErrorKind) -> StatusCode {
    match kind {
        ErrorKind::InvalidInput => StatusCode::UNPROCESSABLE_ENTITY,
        ErrorKind::Malformed | ErrorKind::UnsupportedVersion => StatusCode::BAD_REQUEST,
        ErrorKind::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
        ErrorKind::Timeout => StatusCode::GATEWAY_TIMEOUT,
        ErrorKind::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        ErrorKind::Overloaded | ErrorKind::Limited => StatusCode::TOO_MANY_REQUESTS,
        ErrorKind::DeadLetter | ErrorKind::Internal => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

impl ApiError {
    pub fn new(status: StatusCode, kind: ErrorKind, message: impl Into<String>) -> ApiError {
        ApiError { status, body: ErrorResponse::new(kind, message) }
    }

    pub fn unauthorized(why: &str) -> ApiError {
        ApiError::new(StatusCode::UNAUTHORIZED, ErrorKind::InvalidInput, why)
    }

    /// No such request for this caller: never there, expired, or another tenant's (which is not told apart).
    pub fn not_found(request_id: uuid::Uuid) -> ApiError {
        let message = format!("no request {request_id}");
        ApiError::new(StatusCode::NOT_FOUND, ErrorKind::InvalidInput, message)
    }

    /// A body that is not JSON of the expected shape; the message names the field (`max_turns: invalid type…`).
    pub fn body(rejection: JsonRejection) -> ApiError {
        let kind = if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ErrorKind::TooLarge
        } else {
            ErrorKind::Malformed
        };
        ApiError::new(rejection.status(), kind, rejection.body_text())
    }
}

impl ApiError {
    /// A path parameter that does not parse (a request id that is not a UUID).
    pub fn path(rejection: PathRejection) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, ErrorKind::Malformed, rejection.body_text())
    }
}

impl From<ErrorResponse> for ApiError {
    fn from(body: ErrorResponse) -> ApiError {
        ApiError { status: status_of(body.kind), body }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let retry = self.body.retryable;
        let mut response = (self.status, Json(self.body)).into_response();
        if retry {
            response.headers_mut().insert("retry-after", HeaderValue::from_static("1"));
        }
        response
    }
}
