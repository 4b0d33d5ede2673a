//! [`MemoryEvents`]: the embedded bus's event feeds, one per request: what a request published so far, for late
//! subscribers, and a channel to each live subscriber of that request alone. An event wakes only the tasks that
//! follow its request, and of those only the ones that want it (a requester that shows no progress waits for the
//! final event alone); a shared broadcast woke every waiting requester for every event of every request, and
//! dropped events for a requester that fell 4,096 behind. Nothing is lost however far a subscriber lags.

use std::{
    collections::{HashMap, VecDeque},
    sync::Mutex,
};

use futures::{StreamExt, stream::BoxStream};
use sleuth_messages::{Event, EventKind};
use tokio::sync::mpsc;
use uuid::Uuid;

/// How many requests' events are kept for late subscribers (the oldest are forgotten first, unless someone still
/// follows them).
const HISTORY_REQUESTS: usize = 10_000;

#[derive(Default)]
pub struct MemoryEvents {
    feeds: Mutex<Feeds>,
}

#[derive(Default)]
struct Feeds {
    by_request: HashMap<Uuid, Feed>,
    /// Requests in the order their feeds were made.
    order: VecDeque<Uuid>,
}

#[derive(Default)]
struct Feed {
    past: Vec<Event>,
    live: Vec<(mpsc::UnboundedSender<Event>, Follow)>,
}

/// Which of a request's events a subscriber is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Follow {
    Every,
    Final,
}

impl Follow {
    fn wants(self, event: &Event) -> bool {
        self == Follow::Every || event.kind == EventKind::Final
    }
}

impl Feeds {
    /// The request's feed, made (and the oldest unfollowed feed forgotten past [`HISTORY_REQUESTS`]) if new.
    fn feed(&mut self, request_id: Uuid) -> &mut Feed {
        if !self.by_request.contains_key(&request_id) {
            self.order.push_back(request_id);
            if self.order.len() > HISTORY_REQUESTS
                && let Some(oldest) = self.order.pop_front()
            {
                let followed =
                    self.by_request.get(&oldest).is_some_and(|f| f.live.iter().any(|(tx, _)| !tx.is_closed()));
                if followed {
                    // Kept while a requester waits on it; forgotten on a later turn once nobody does.
                    self.order.push_back(oldest);
                } else {
                    self.by_request.remove(&oldest);
                }
            }
        }
        self.by_request.entry(request_id).or_default()
    }
}

impl MemoryEvents {
    /// Records `event` in its request's feed and hands it to the request's live subscribers.
    pub fn publish(&self, event: &Event) {
        let mut feeds = self.feeds.lock().expect("event feeds poisoned");
        let feed = feeds.feed(event.request_id);
        feed.past.push(event.clone());
        feed.live
            .retain(|(tx, follow)| if follow.wants(event) { tx.send(event.clone()).is_ok() } else { !tx.is_closed() });
    }

    /// A request's events (those `follow` names) from the beginning, then live. The past is read and the subscriber
    /// registered under one lock, so no event is missed or seen twice.
    pub fn subscribe(&self, request_id: Uuid, follow: Follow) -> BoxStream<'static, Event> {
        let (tx, rx) = mpsc::unbounded_channel();
        let mut feeds = self.feeds.lock().expect("event feeds poisoned");
        let feed = feeds.feed(request_id);
        let past: Vec<Event> = feed.past.iter().filter(|e| follow.wants(e)).cloned().collect();
        feed.live.push((tx, follow));
        drop(feeds);
        let live = futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|e| (e, rx)) });
        futures::stream::iter(past).chain(live).boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sleuth_messages::{EventBody, EventKind};

    /// An event told apart by its turn.
    fn event(request_id: Uuid, turn: u32) -> Event {
        Event { request_id, turn, kind: EventKind::Retrieved, body: EventBody::Retrieved { cards: turn, new_cards: 0 } }
    }

    fn turns(events: &[Event]) -> Vec<u32> {
        events.iter().map(|e| e.turn).collect()
    }

    #[tokio::test]
    async fn a_subscriber_sees_its_request_from_the_start_and_no_other() {
        let events = MemoryEvents::default();
        let (mine, other) = (Uuid::now_v7(), Uuid::now_v7());
        events.publish(&event(mine, 1));
        let mut feed = events.subscribe(mine, Follow::Every);
        events.publish(&event(other, 1));
        events.publish(&event(mine, 2));
        let got: Vec<Event> = (&mut feed).take(2).collect().await;
        assert_eq!(turns(&got), [1, 2]);
        assert!(got.iter().all(|e| e.request_id == mine));
    }

    #[tokio::test]
    async fn a_subscriber_that_lags_loses_nothing() {
        let events = MemoryEvents::default();
        let id = Uuid::now_v7();
        let feed = events.subscribe(id, Follow::Every);
        for seq in 0..10_000 {
            events.publish(&event(id, seq));
        }
        let got: Vec<Event> = feed.take(10_000).collect().await;
        assert_eq!(got.len(), 10_000, "a broadcast of 4,096 would have dropped the oldest");
    }

    #[tokio::test]
    async fn a_subscriber_of_the_final_event_is_given_that_alone() {
        let events = MemoryEvents::default();
        let id = Uuid::now_v7();
        events.publish(&event(id, 1));
        let mut outcome = events.subscribe(id, Follow::Final);
        events.publish(&event(id, 2));
        // The feed reads an event's kind, never its body.
        let done = Event {
            request_id: id,
            turn: 3,
            kind: EventKind::Final,
            body: EventBody::Retrieved { cards: 0, new_cards: 0 },
        };
        events.publish(&done);
        assert_eq!(outcome.next().await.map(|e| e.kind), Some(EventKind::Final));
        // A late subscriber of the final event finds it in the past.
        let late: Vec<Event> = events.subscribe(id, Follow::Final).take(1).collect().await;
        assert_eq!(turns(&late), [3]);
    }

    #[test]
    fn old_feeds_are_forgotten_unless_followed() {
        let events = MemoryEvents::default();
        let followed = Uuid::now_v7();
        let _follower = events.subscribe(followed, Follow::Every);
        let forgotten = Uuid::now_v7();
        events.publish(&event(forgotten, 1));
        for _ in 0..HISTORY_REQUESTS {
            events.publish(&event(Uuid::now_v7(), 1));
        }
        let feeds = events.feeds.lock().unwrap();
        assert!(feeds.by_request.contains_key(&followed), "a followed request's feed is kept");
        assert!(!feeds.by_request.contains_key(&forgotten), "the oldest unfollowed feed is forgotten");
        assert!(feeds.by_request.len() <= HISTORY_REQUESTS + 1);
    }
}
