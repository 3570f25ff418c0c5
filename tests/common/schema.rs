//! The small part of JSON Schema that schema/summary.schema.json uses:
//! type, const, enum, required, properties, additionalProperties, items, $ref.

use serde_json::Value;

pub fn validate(schema: &Value, root: &Value, v: &Value, path: &str, errors: &mut Vec<String>) {
    if let Some(r) = schema.get("$ref").and_then(Value::as_str) {
        let name = r.trim_start_matches("#/$defs/");
        return validate(&root["$defs"][name], root, v, path, errors);
    }
    if let Some(c) = schema.get("const")
        && c != v
    {
        errors.push(format!("{path}: expected {c}, got {v}"));
    }
    if let Some(options) = schema.get("enum").and_then(Value::as_array)
        && !options.contains(v)
    {
        errors.push(format!("{path}: {v} is not one of {options:?}"));
    }
    if let Some(t) = schema.get("type") {
        let types: Vec<&str> = match t {
            Value::String(s) => vec![s.as_str()],
            Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
            _ => vec![],
        };
        let ok = types.iter().any(|t| match *t {
            "object" => v.is_object(),
            "array" => v.is_array(),
            "string" => v.is_string(),
            "number" => v.is_number(),
            "integer" => v.is_u64() || v.is_i64(),
            "boolean" => v.is_boolean(),
            "null" => v.is_null(),
            _ => false,
        });
        if !ok {
            errors.push(format!("{path}: expected {types:?}, got {v}"));
            return;
        }
    }
    if let Some(obj) = v.as_object() {
        for req in schema.get("required").and_then(Value::as_array).into_iter().flatten() {
            let key = req.as_str().unwrap();
            if !obj.contains_key(key) {
                errors.push(format!("{path}: missing required `{key}`"));
            }
        }
        let props = schema.get("properties").and_then(Value::as_object);
        for (k, child) in obj {
            let p = format!("{path}.{k}");
            match (props.and_then(|p| p.get(k)), schema.get("additionalProperties")) {
                (Some(s), _) => validate(s, root, child, &p, errors),
                (None, Some(Value::Bool(false))) => errors.push(format!("{p}: not in the schema")),
                (None, Some(s)) if s.is_object() => validate(s, root, child, &p, errors),
                _ => {}
            }
        }
    }
    if let (Some(items), Some(arr)) = (schema.get("items"), v.as_array()) {
        for (i, x) in arr.iter().enumerate() {
            validate(items, root, x, &format!("{path}[{i}]"), errors);
        }
    }
}
