//! HTML escaping, shared by the page builders (html, clients, agents) without tying them to
//! each other.

/// `s` safe inside HTML text and attribute values.
pub(crate) fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}
