//! [`RetrievalCache`]: seed 001's retrieval cache, an LRU with a TTL in front of the retrieve stage, without its
//! limitations. The key is normalised (case, punctuation, white space), so "What is X?" and "what is x" share an
//! entry; searches with filters bypass it; the key holds what the requester may read, so two tenants never share
//! an entry; and every entry belongs to an index generation, so an ingestion on any replica
//! ([`IndexGeneration`](crate::store::IndexGeneration)) empties every cache.

use std::{
    num::NonZeroUsize,
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use lru::LruCache;
use sleuth_messages::{CacheStats, Hit, SearchIntent};

use crate::{access::Access, config::IntakeConfig};

pub struct RetrievalCache {
    inner: Mutex<Inner>,
    capacity: usize,
    ttl: Duration,
    hits: AtomicU64,
    misses: AtomicU64,
    bypassed: AtomicU64,
    invalidations: AtomicU64,
}

struct Inner {
    lru: LruCache<String, (Instant, Vec<Hit>)>,
    generation: u64,
}

impl RetrievalCache {
    pub fn new(capacity: usize, ttl: Duration) -> RetrievalCache {
        let cap = NonZeroUsize::new(capacity.max(1)).expect("at least one entry");
        RetrievalCache {
            inner: Mutex::new(Inner { lru: LruCache::new(cap), generation: 0 }),
            capacity: cap.get(),
            ttl,
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            bypassed: AtomicU64::new(0),
            invalidations: AtomicU64::new(0),
        }
    }

    /// The configured cache, or `None` when `intake.cache_entries` is 0.
    pub fn from_config(config: &IntakeConfig) -> Option<Arc<RetrievalCache>> {
        (config.cache_entries > 0)
            .then(|| Arc::new(RetrievalCache::new(config.cache_entries, Duration::from_secs(config.cache_ttl_s))))
    }

    /// The key of a search for `access`, or `None` (counted as bypassed) when it has filters or no query. `exact`
    /// is the literal-constraint mode, whose results differ from the same query's hybrid ones.
    pub fn key(&self, intent: &SearchIntent, limit: usize, exact: &[String], access: &Access) -> Option<String> {
        let query = intent.query.as_deref().map(normalize).filter(|q| !q.is_empty());
        let Some(query) = query.filter(|_| intent.filters.is_empty()) else {
            self.bypassed.fetch_add(1, Ordering::Relaxed);
            return None;
        };
        let readers = access.cache_key();
        Some(format!("{query}|{}|{limit}|{}|{readers}", intent.entity_type.as_str(), exact.join("\u{1f}")))
    }

    /// The cached hits for `key` under `generation`, if fresh.
    pub fn get(&self, key: &str, generation: u64) -> Option<Vec<Hit>> {
        let mut inner = self.inner.lock().expect("cache poisoned");
        self.roll(&mut inner, generation);
        let found = match inner.lru.get(key) {
            Some((at, hits)) if at.elapsed() < self.ttl => Some(hits.clone()),
            Some(_) => {
                inner.lru.pop(key);
                None
            }
            None => None,
        };
        let counter = if found.is_some() { &self.hits } else { &self.misses };
        counter.fetch_add(1, Ordering::Relaxed);
        found
    }

    /// Remembers what a search computed under `generation`.
    pub fn put(&self, key: String, generation: u64, hits: Vec<Hit>) {
        let mut inner = self.inner.lock().expect("cache poisoned");
        self.roll(&mut inner, generation);
        if inner.generation == generation {
            inner.lru.put(key, (Instant::now(), hits));
        }
    }

    /// Empties the cache when the index generation moved past the one its entries belong to.
    fn roll(&self, inner: &mut Inner, generation: u64) {
        if generation > inner.generation {
            inner.lru.clear();
            inner.generation = generation;
            self.invalidations.fetch_add(1, Ordering::Relaxed);
        }
    }

    pub fn stats(&self) -> CacheStats {
        let inner = self.inner.lock().expect("cache poisoned");
        CacheStats {
            entries: inner.lru.len() as u64,
            capacity: self.capacity as u64,
            ttl_s: self.ttl.as_secs(),
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            bypassed: self.bypassed.load(Ordering::Relaxed),
            invalidations: self.invalidations.load(Ordering::Relaxed),
            generation: inner.generation,
        }
    }
}

/// Lowercase, punctuation to spaces, white space collapsed: "What is X?" and "what is x" are one key.
pub fn normalize(query: &str) -> String {
    query
        .chars()
        .map(|c| if c.is_alphanumeric() { c.to_lowercase().next().unwrap_or(c) } else { ' ' })
        .collect::<String>()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use sleuth_messages::{JsonMap, SearchIntent};

    fn hit(id: &str) -> Hit {
        Hit {
            id: id.into(),
            doc_id: id.into(),
            title: id.into(),
            text: String::new(),
            score: 1.0,
            metadata: JsonMap::new(),
        }
    }

    #[test]
    fn equivalent_queries_share_an_entry_and_filters_bypass() {
        let cache = RetrievalCache::new(50, Duration::from_secs(300));
        let shared = Access::shared();
        let key = cache.key(&SearchIntent::documents("r", "What is  Luffy's hat?"), 8, &[], &shared).unwrap();
        let alpha = Access::of(Some(&sleuth_messages::Principal::tenant("alpha")), &Default::default());
        assert_ne!(
            cache.key(&SearchIntent::documents("r", "What is  Luffy's hat?"), 8, &[], &alpha).as_ref(),
            Some(&key),
            "a tenant's search never reads another's entry"
        );
        assert_eq!(
            cache.key(&SearchIntent::documents("r", "what is luffy s hat"), 8, &[], &shared).as_ref(),
            Some(&key)
        );
        assert_ne!(
            cache.key(&SearchIntent::documents("r", "what is luffy s hat"), 4, &[], &shared).as_ref(),
            Some(&key)
        );
        assert_ne!(
            cache.key(&SearchIntent::documents("r", "what is luffy s hat"), 8, &["hat".into()], &shared).as_ref(),
            Some(&key)
        );
        let mut filtered = SearchIntent::documents("r", "What is Luffy's hat?");
        filtered.filters.insert("doc_id".into(), "luffy".into());
        assert_eq!(cache.key(&filtered, 8, &[], &shared), None);
        assert_eq!(cache.get(&key, 0), None);
        cache.put(key.clone(), 0, vec![hit("a")]);
        assert_eq!(cache.get(&key, 0), Some(vec![hit("a")]));
        let stats = cache.stats();
        assert_eq!((stats.hits, stats.misses, stats.bypassed, stats.entries), (1, 1, 1, 1));
    }

    #[test]
    fn entries_expire_and_the_least_recently_used_goes_first() {
        let cache = RetrievalCache::new(2, Duration::from_millis(50));
        cache.put("a".into(), 0, vec![hit("a")]);
        cache.put("b".into(), 0, vec![hit("b")]);
        assert!(cache.get("a", 0).is_some());
        cache.put("c".into(), 0, vec![hit("c")]);
        assert!(cache.get("b", 0).is_none(), "b was the least recently used");
        std::thread::sleep(Duration::from_millis(60));
        assert!(cache.get("a", 0).is_none(), "a expired");
    }

    #[test]
    fn a_new_index_generation_empties_the_cache() {
        let cache = RetrievalCache::new(50, Duration::from_secs(300));
        cache.put("a".into(), 3, vec![hit("a")]);
        assert!(cache.get("a", 3).is_some());
        assert!(cache.get("a", 4).is_none());
        // A slow search that started under generation 3 does not write into generation 4.
        cache.put("a".into(), 3, vec![hit("old")]);
        assert!(cache.get("a", 4).is_none());
        assert_eq!(cache.stats().invalidations, 2);
    }
}
