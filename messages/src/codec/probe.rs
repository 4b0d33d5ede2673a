//! The schema version a payload declares, read before the full decode so that a future shape is reported as a
//! version problem.
//!
//! The version is found where the full decode would find it. sleuth writes fields by name, but serde also
//! matches a MessagePack map keyed by field *index*, and a struct sent as an array, by position; a probe that read
//! names only let `{5: 5}` through as an `AskRequest` of version 5 (found by fuzzing; the input is in `fuzz/corpus/wire`).
//! So the probe learns `T`'s field list from serde itself and looks by name, by index and by position.

use std::{cell::Cell, fmt};

use serde::{
    Deserialize, Deserializer,
    de::{self, DeserializeOwned, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor},
    forward_to_deserialize_any,
};

use super::{Encoding, parse_seeded};
use crate::envelope::Envelope;

/// The version `bytes` declare for `T`: its own `schema_version` field, else its envelope's. `None` when the
/// payload declares none, `T` has neither field, or the payload is too malformed to say (the full decode says).
pub(super) fn declared_version<T: DeserializeOwned>(bytes: &[u8], encoding: Encoding) -> Option<u16> {
    let fields = struct_fields::<T>()?;
    // MessagePack is read only as far as the version: a work message's envelope comes first and its loop state
    // after, and walking the state was a tenth of a hop's instructions. The probe then stops the parse with an
    // error (the parser insists that a map it began is read to its end) and leaves what it found here. JSON, only
    // ever a client's question, is read to its end.
    let found = Cell::new(None);
    let probe = Probe {
        version_at: position(fields, "schema_version"),
        envelope_at: position(fields, "envelope"),
        stop: (encoding == Encoding::MsgPack).then_some(&found),
    };
    if probe.version_at.is_none() && probe.envelope_at.is_none() {
        return None;
    }
    match parse_seeded(bytes, encoding, probe) {
        Ok(version) => version,
        Err(_) => found.get().flatten(),
    }
}

fn position(fields: &[&str], name: &str) -> Option<usize> {
    fields.iter().position(|field| *field == name)
}

/// Where to look in one struct: the version field's position, and the envelope's (whose version is looked up
/// the same way, one level down). With `stop`, the parse ends as soon as what the struct declares is known (its
/// own version, or its envelope's when it has no version field of its own), with that left in `stop`. (A field
/// given twice, which would make this differ from the full decode, fails that decode anyway.)
#[derive(Clone, Copy)]
struct Probe<'a> {
    version_at: Option<usize>,
    envelope_at: Option<usize>,
    stop: Option<&'a Cell<Option<Option<u16>>>>,
}

impl<'a> Probe<'a> {
    /// The probe of this struct's envelope, which may end the parse only when this struct's answer is its
    /// envelope's.
    fn envelope_probe(&self) -> Probe<'a> {
        let fields = struct_fields::<Envelope>().unwrap_or_default();
        let stop = self.stop.filter(|_| self.version_at.is_none());
        Probe { version_at: position(fields, "schema_version"), envelope_at: None, stop }
    }

    /// Ends the parse with the answer, once it is known and this probe may stop: the struct's own version when it
    /// gives one, else its envelope's (`seen` says which of the two were read so far).
    fn stop_with<E: de::Error>(
        &self,
        seen: (bool, bool),
        version: Option<u16>,
        envelope: Option<u16>,
    ) -> Result<(), E> {
        let (seen_version, seen_envelope) = seen;
        let known = version.is_some()
            || ((seen_version || self.version_at.is_none()) && (seen_envelope || self.envelope_at.is_none()));
        match self.stop {
            Some(found) if known => {
                found.set(Some(version.or(envelope)));
                Err(E::custom("the declared version is found"))
            }
            _ => Ok(()),
        }
    }

    /// What the value at `key` is to this probe.
    fn role(&self, key: &Key) -> Role {
        let index = match key {
            Key::Version => return self.version_role(),
            Key::Envelope => return self.envelope_role(),
            Key::Other => return Role::Skip,
            Key::Index(index) => Some(*index),
        };
        if index == self.version_at {
            self.version_role()
        } else if index == self.envelope_at {
            self.envelope_role()
        } else {
            Role::Skip
        }
    }

    fn version_role(&self) -> Role {
        if self.version_at.is_some() { Role::Version } else { Role::Skip }
    }

    fn envelope_role(&self) -> Role {
        if self.envelope_at.is_some() { Role::Envelope } else { Role::Skip }
    }
}

enum Role {
    Version,
    Envelope,
    Skip,
}

impl<'de> DeserializeSeed<'de> for Probe<'_> {
    type Value = Option<u16>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Option<u16>, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Probe<'_> {
    type Value = Option<u16>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a struct, as a map or an array")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Option<u16>, A::Error> {
        let (mut version, mut envelope) = (None, None);
        let mut seen = (false, false);
        while let Some(key) = map.next_key::<Key>()? {
            match self.role(&key) {
                Role::Version => (version, seen.0) = (map.next_value::<Option<u16>>()?, true),
                Role::Envelope => (envelope, seen.1) = (map.next_value_seed(self.envelope_probe())?, true),
                Role::Skip => {
                    map.next_value::<IgnoredAny>()?;
                    continue;
                }
            }
            self.stop_with(seen, version, envelope)?;
        }
        Ok(version.or(envelope))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Option<u16>, A::Error> {
        let (mut version, mut envelope) = (None, None);
        let mut seen = (false, false);
        let mut index = 0;
        loop {
            let role = self.role(&Key::Index(index));
            let found = match role {
                Role::Version => seq.next_element::<Option<u16>>()?.map(|v| (version, seen.0) = (v, true)),
                Role::Envelope => seq.next_element_seed(self.envelope_probe())?.map(|v| (envelope, seen.1) = (v, true)),
                Role::Skip => seq.next_element::<IgnoredAny>()?.map(drop),
            };
            if found.is_none() {
                return Ok(version.or(envelope));
            }
            if !matches!(role, Role::Skip) {
                self.stop_with(seen, version, envelope)?;
            }
            index += 1;
        }
    }
}

/// A map key as serde's derived field visitors accept it, as far as the probe cares: one of the two names it
/// looks for, a field index, or anything else (read without allocating).
enum Key {
    Version,
    Envelope,
    Index(usize),
    Other,
}

impl Key {
    fn named(name: &str) -> Key {
        match name {
            "schema_version" => Key::Version,
            "envelope" => Key::Envelope,
            _ => Key::Other,
        }
    }
}

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Key, D::Error> {
        deserializer.deserialize_any(KeyVisitor)
    }
}

struct KeyVisitor;

impl<'de> Visitor<'de> for KeyVisitor {
    type Value = Key;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a field name or index")
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Key, E> {
        Ok(usize::try_from(v).map_or(Key::Other, Key::Index))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Key, E> {
        Ok(usize::try_from(v).map_or(Key::Other, Key::Index))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Key, E> {
        Ok(Key::named(v))
    }

    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Key, E> {
        Ok(std::str::from_utf8(v).map_or(Key::Other, Key::named))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Key, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Key::Other)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Key, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Key::Other)
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Key, E> {
        Ok(Key::Other)
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Key, E> {
        Ok(Key::Other)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Key, E> {
        Ok(Key::Other)
    }
}

/// `T`'s field names in declaration order (their indices are what serde matches positionally), or `None` when
/// `T` does not deserialize as a plain struct.
fn struct_fields<T: DeserializeOwned>() -> Option<&'static [&'static str]> {
    let mut recorder = FieldRecorder(None);
    let _ = T::deserialize(&mut recorder);
    recorder.0
}

/// A deserializer that fails at once, noting the field list when asked for a struct.
struct FieldRecorder(Option<&'static [&'static str]>);

impl<'de> Deserializer<'de> for &mut FieldRecorder {
    type Error = de::value::Error;

    // The errors carry no message: nobody reads them, and an empty one costs no allocation on every decode.
    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
        Err(de::Error::custom(""))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.0 = Some(fields);
        Err(de::Error::custom(""))
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option unit
        unit_struct newtype_struct seq tuple tuple_struct map enum identifier ignored_any
    }
}
