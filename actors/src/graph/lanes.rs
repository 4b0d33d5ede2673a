//! The graph service's request/reply lanes beside the loop: `sleuth.v1.search` (typeahead over entity names) and
//! `sleuth.v1.hydrate` (many entities by id in one query). Requests are MessagePack or JSON; the reply goes back
//! in the request's encoding, with a typed error for a bad request. Both answer with what the requester may read
//! (`crate::access`): the tenant the NATS server (or the gateway) names in `Nats-Request-Info`, else shared
//! entities only.

use std::sync::Arc;

use async_nats::service::{Request, Service, endpoint::Endpoint};
use bytes::Bytes;
use serde::de::DeserializeOwned;
use sleuth_messages::{
    EntitiesReply, EntityRecord, EntityType, ErrorKind, ErrorResponse, HydrateRequest, MAX_HYDRATE_IDS,
    MAX_SEARCH_CHARS, SearchRequest, codec,
};
use uuid::Uuid;

use crate::{
    access::Access,
    graph::{Entity, GraphError, GraphStore, entity_ref, node_of},
};

/// `tenants.groups`: reader groups and their members.
pub type Groups = std::collections::BTreeMap<String, Vec<String>>;

/// Adds the `search` and `hydrate` endpoints to the graph service.
pub async fn endpoints(
    service: &Service,
    search_subject: String,
    hydrate_subject: String,
) -> anyhow::Result<(Endpoint, Endpoint)> {
    let add = |name: &'static str, subject: String| async move {
        service
            .endpoint_builder()
            .name(name)
            .add(subject)
            .await
            .map_err(|e| anyhow::anyhow!("cannot add the {name} endpoint: {e}"))
    };
    Ok((add("search", search_subject).await?, add("hydrate", hydrate_subject).await?))
}

/// Answers one request of a lane; the graph stage's [`crate::runtime::responder`] pools call it.
pub async fn answer<R, F, Fut>(store: Arc<dyn GraphStore>, groups: Arc<Groups>, answer: F, request: Request)
where
    R: DeserializeOwned,
    F: Fn(Arc<dyn GraphStore>, R, Access) -> Fut,
    Fut: std::future::Future<Output = Result<Vec<EntityRecord>, ErrorResponse>>,
{
    let payload = &request.message.payload;
    let encoding = sleuth_messages::Encoding::detect(payload);
    let by = crate::nats_client::requester(request.message.headers.as_ref());
    let reply = match (codec::decode::<R>(payload), by) {
        (Ok((req, _)), Ok(by)) => match answer(store, req, Access::of(by.as_ref(), &groups)).await {
            Ok(entities) => EntitiesReply { entities, error: None },
            Err(error) => EntitiesReply { entities: Vec::new(), error: Some(error) },
        },
        (Err(e), _) => EntitiesReply { entities: Vec::new(), error: Some(e.into()) },
        (_, Err(why)) => {
            EntitiesReply { entities: Vec::new(), error: Some(ErrorResponse::new(ErrorKind::InvalidInput, why)) }
        }
    };
    let body = codec::encode(&reply, encoding).unwrap_or_default();
    if let Err(e) = request.respond(Ok(Bytes::from(body))).await {
        tracing::warn!(error = %e, "cannot answer a lane request");
    }
}

fn record(entity: &Entity) -> Option<EntityRecord> {
    Some(EntityRecord {
        entity: entity_ref(entity)?,
        name: entity.name.clone(),
        aliases: entity.aliases.clone(),
        popularity: entity.popularity,
        attributes: entity.attributes.clone(),
    })
}

fn backend_error(err: GraphError) -> ErrorResponse {
    match err {
        GraphError::Timeout(after) => {
            ErrorResponse::new(ErrorKind::Timeout, format!("graph query timed out after {after:?}"))
        }
        GraphError::Backend(e) => {
            tracing::error!(error = format!("{e:#}"), "graph lane failed");
            match crate::guard::unavailable(&e) {
                Some(down) => ErrorResponse::new(ErrorKind::Unavailable, down.to_string()),
                None => ErrorResponse::new(ErrorKind::Unavailable, "the graph database is unavailable"),
            }
        }
    }
}

/// Typeahead: validated, clamped, most popular first.
pub async fn search(
    store: Arc<dyn GraphStore>,
    req: SearchRequest,
    access: Access,
) -> Result<Vec<EntityRecord>, ErrorResponse> {
    let text = req.text.trim();
    if text.is_empty() || text.chars().count() > MAX_SEARCH_CHARS {
        return Err(ErrorResponse::new(
            ErrorKind::InvalidInput,
            format!("search text must be 1 to {MAX_SEARCH_CHARS} characters"),
        ));
    }
    let limit = req.limit.unwrap_or(10).clamp(1, 100);
    let found = store
        .search(text, req.entity_type.as_ref().map(EntityType::as_str), limit, &access)
        .await
        .map_err(backend_error)?;
    Ok(found.iter().filter_map(record).collect())
}

/// Hydration: the known ones of `ids`, in the order asked.
pub async fn hydrate(
    store: Arc<dyn GraphStore>,
    req: HydrateRequest,
    access: Access,
) -> Result<Vec<EntityRecord>, ErrorResponse> {
    if req.ids.len() > MAX_HYDRATE_IDS {
        return Err(ErrorResponse::new(ErrorKind::InvalidInput, format!("at most {MAX_HYDRATE_IDS} ids per request")));
    }
    let ids: Vec<Uuid> = req
        .ids
        .iter()
        .map(node_of)
        .collect::<Result<_, _>>()
        .map_err(|message| ErrorResponse::new(ErrorKind::InvalidInput, message))?;
    let found = store.entities(&ids, &access).await.map_err(backend_error)?;
    Ok(ids.iter().filter_map(|id| found.iter().find(|e| e.id == *id)).filter_map(record).collect())
}
