//! `[expect]` and `[baseline]` as written: what a run is judged by, beside the workload
//! the rest of `raw.rs` mirrors.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One expectation: the comparison alone, or with `abort = true` (stop the run when it fails live).
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub(crate) enum RawExpect {
    Expr(String),
    Table(RawExpectTable),
}

impl<'de> Deserialize<'de> for RawExpect {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = RawExpect;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a comparison like \"== 0\" or a table like { expr = \"== 0\", abort = true }")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<RawExpect, E> {
                Ok(RawExpect::Expr(v.to_string()))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<RawExpect, A::Error> {
                RawExpectTable::deserialize(serde::de::value::MapAccessDeserializer::new(map)).map(RawExpect::Table)
            }
        }
        d.deserialize_any(V)
    }
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawExpectTable {
    pub expr: String,
    #[serde(default)]
    pub abort: bool,
}

/// `[baseline]`: how a run is compared with a saved baseline.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawBaseline {
    /// `"metric" = "10%"` (the change allowed in the bad direction), `"0"` or `"off"`.
    #[serde(default)]
    pub tolerance: BTreeMap<String, String>,
}
