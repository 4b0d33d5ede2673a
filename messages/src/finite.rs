//! Numbers on the wire are finite. JSON has no infinity or NaN: an `f32` field given `1e39` would decode as
//! infinity and encode back as `null`, which no reader accepts (found by fuzzing, `fuzz/corpus/wire`). So every
//! float field is read through these, and a non-finite value is a malformed payload, whatever the encoding.

use serde::{Deserialize, Deserializer, de::Error};

fn finite<'de, D: Deserializer<'de>, T: Into<f64> + Copy>(value: T) -> Result<T, D::Error> {
    let wide: f64 = value.into();
    if wide.is_finite() { Ok(value) } else { Err(D::Error::custom(format!("{wide} is not a finite number"))) }
}

pub fn f32<'de, D: Deserializer<'de>>(deserializer: D) -> Result<f32, D::Error> {
    finite::<D, f32>(f32::deserialize(deserializer)?)
}

pub fn f64<'de, D: Deserializer<'de>>(deserializer: D) -> Result<f64, D::Error> {
    finite::<D, f64>(f64::deserialize(deserializer)?)
}

pub fn option_f32<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<f32>, D::Error> {
    Option::<f32>::deserialize(deserializer)?.map(finite::<D, f32>).transpose()
}
