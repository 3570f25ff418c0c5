//! A queue's own job ids, attempts and tokens, whatever their column types. The journal and
//! the checkers count jobs by an `i64`: an integer id is its own surrogate, a uuid or text id
//! gets one from the [`Interner`] the first time it is seen. The original value goes back into
//! the queue's statements as it came: bound with the type the server expects for that
//! parameter (a `smallint` attempt, an `int4` id, a `uuid` token), so adapters never cast.

use bytes::BytesMut;
use std::collections::HashMap;
use std::error::Error as StdError;
use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, Ordering};
use tokio_postgres::types::{FromSql, IsNull, ToSql, Type, to_sql_checked};
use uuid::Uuid;

/// A value a claim returned (id, attempt or token), as the server typed it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Key {
    Int(i64),
    Uuid(Uuid),
    Text(String),
    /// Any other scalar (a `timestamptz` token, a `numeric` fence …): its type and its binary
    /// form as the server sent it, bound back byte for byte to a parameter of the same type.
    Raw(Type, Vec<u8>),
}

impl Key {
    /// The key as text (reports, explain output).
    pub fn show(&self) -> String {
        match self {
            Key::Int(i) => i.to_string(),
            Key::Uuid(u) => u.to_string(),
            Key::Text(t) => t.clone(),
            Key::Raw(ty, bytes) => {
                let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
                format!("{ty}:{hex}")
            }
        }
    }

    /// 64 bits that tell tokens apart in the journal: a uuid's first 8 bytes, an integer as it
    /// is, a text's hash.
    pub fn tag(&self) -> u64 {
        match self {
            Key::Int(i) => *i as u64,
            Key::Uuid(u) => u64::from_be_bytes(u.as_bytes()[..8].try_into().expect("8 bytes")),
            Key::Text(t) => {
                use std::hash::{Hash, Hasher};
                let mut h = std::collections::hash_map::DefaultHasher::new();
                t.hash(&mut h);
                h.finish()
            }
            Key::Raw(_, bytes) => {
                use std::hash::{Hash, Hasher};
                let mut h = std::collections::hash_map::DefaultHasher::new();
                bytes.hash(&mut h);
                h.finish()
            }
        }
    }

    pub fn as_int(&self) -> Option<i64> {
        match self {
            Key::Int(i) => Some(*i),
            _ => None,
        }
    }
}

impl<'a> FromSql<'a> for Key {
    fn from_sql(ty: &Type, raw: &'a [u8]) -> Result<Self, Box<dyn StdError + Sync + Send>> {
        Ok(match *ty {
            Type::INT2 => Key::Int(i64::from(i16::from_sql(ty, raw)?)),
            Type::INT4 => Key::Int(i64::from(i32::from_sql(ty, raw)?)),
            Type::INT8 => Key::Int(i64::from_sql(ty, raw)?),
            Type::UUID => Key::Uuid(Uuid::from_sql(ty, raw)?),
            Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME => Key::Text(String::from_sql(ty, raw)?),
            _ => Key::Raw(ty.clone(), raw.to_vec()),
        })
    }

    fn accepts(ty: &Type) -> bool {
        Self::token_type_ok(ty)
    }
}

impl Key {
    /// Column types a claim may return an id, attempt or token in.
    pub fn column_type_ok(ty: &Type) -> bool {
        matches!(*ty, Type::INT2 | Type::INT4 | Type::INT8 | Type::UUID | Type::TEXT | Type::VARCHAR | Type::BPCHAR)
    }

    /// Column types a claim may return a token in, or a statement hand the next one: any
    /// scalar (a base type, an enum or a domain), none of them an array or a row.
    pub fn token_type_ok(ty: &Type) -> bool {
        use tokio_postgres::types::Kind;
        matches!(ty.kind(), Kind::Simple | Kind::Enum(_) | Kind::Domain(_) | Kind::Pseudo)
    }
}

impl ToSql for Key {
    fn to_sql(&self, ty: &Type, out: &mut BytesMut) -> Result<IsNull, Box<dyn StdError + Sync + Send>> {
        match (self, ty) {
            (Key::Int(i), &Type::INT2) => i16::try_from(*i)?.to_sql(ty, out),
            (Key::Int(i), &Type::INT4) => i32::try_from(*i)?.to_sql(ty, out),
            (Key::Int(i), &Type::INT8) => i.to_sql(ty, out),
            (Key::Uuid(u), &Type::UUID) => u.to_sql(ty, out),
            (Key::Text(t), &Type::UUID) => Uuid::parse_str(t)?.to_sql(ty, out),
            (Key::Text(t), &Type::INT8 | &Type::INT4 | &Type::INT2) => Key::Int(t.parse()?).to_sql(ty, out),
            (Key::Raw(kt, bytes), _) if kt == ty => {
                out.extend_from_slice(bytes);
                Ok(IsNull::No)
            }
            (Key::Raw(kt, _), _) => Err(format!(
                "a value the server returned as {kt} is bound where it expects {ty}: cast one to the other"
            )
            .into()),
            (k, t) if Self::text_like(t) => k.show().to_sql(ty, out),
            (k, _) => Err(format!("the value {} cannot be bound as {ty}", k.show()).into()),
        }
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    to_sql_checked!();
}

impl Key {
    fn text_like(ty: &Type) -> bool {
        matches!(*ty, Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME | Type::UNKNOWN)
    }
}

/// Surrogates for ids that are not integers: each distinct uuid or text id gets the next
/// number, once (shared by the workers and producers of a run; a miss takes a lock, which the
/// integer ids of the built-in table never do).
#[derive(Debug)]
pub struct Interner {
    next: AtomicI64,
    shards: Vec<Mutex<HashMap<Key, i64>>>,
    /// surrogate → key, for reports that name a job as the queue does.
    names: Mutex<Vec<Key>>,
    /// The job it was retried as → the job: a failure that re-inserted the job under a new id.
    successors: Mutex<HashMap<i64, i64>>,
}

impl Default for Interner {
    fn default() -> Self {
        Interner {
            next: AtomicI64::new(1),
            shards: (0..16).map(|_| Mutex::new(HashMap::new())).collect(),
            names: Mutex::new(Vec::new()),
            successors: Mutex::new(HashMap::new()),
        }
    }
}

impl Interner {
    /// The job's number in the journal: an integer id as it is, anything else interned.
    pub fn surrogate(&self, key: &Key) -> i64 {
        if let Key::Int(i) = key {
            return *i;
        }
        let mut map = self.shard(key).lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = map.get(key) {
            return *n;
        }
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        map.insert(key.clone(), n);
        let mut names = self.names.lock().unwrap_or_else(|e| e.into_inner());
        let i = (n - 1) as usize;
        if names.len() <= i {
            names.resize(i + 1, Key::Int(0));
        }
        names[i] = key.clone();
        n
    }

    /// The job's number in the journal if it has one: an integer id as it is, anything else
    /// only when it was numbered before (the reaper reads ids it need not number).
    pub fn find(&self, key: &Key) -> Option<i64> {
        if let Key::Int(i) = key {
            return Some(*i);
        }
        self.shard(key).lock().unwrap_or_else(|e| e.into_inner()).get(key).copied()
    }

    fn shard(&self, key: &Key) -> &Mutex<HashMap<Key, i64>> {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        key.hash(&mut h);
        &self.shards[h.finish() as usize % self.shards.len()]
    }

    /// Records that the job `old` goes on as `new` (its failure re-inserted it under a new id).
    pub fn succeed(&self, old: i64, new: i64) {
        self.successors.lock().unwrap_or_else(|e| e.into_inner()).insert(new, old);
    }

    /// Every (job, its successor) recorded so far, in the order of the new ids.
    pub fn successors(&self) -> Vec<(i64, i64)> {
        let map = self.successors.lock().unwrap_or_else(|e| e.into_inner());
        let mut out: Vec<(i64, i64)> = map.iter().map(|(&new, &old)| (old, new)).collect();
        out.sort_unstable_by_key(|&(_, new)| new);
        out
    }

    /// The first id of the chain `id` belongs to (itself when it was never a retry's new id).
    pub fn root(&self, mut id: i64) -> i64 {
        let map = self.successors.lock().unwrap_or_else(|e| e.into_inner());
        for _ in 0..=map.len() {
            match map.get(&id) {
                Some(&old) if old != id => id = old,
                _ => break,
            }
        }
        id
    }

    /// Has any id been numbered (a queue whose ids are not integers)?
    pub fn numbered_any(&self) -> bool {
        self.next.load(Ordering::Relaxed) > 1
    }

    /// The queue's own id for a surrogate (an integer id is its own).
    pub fn key(&self, surrogate: i64) -> Key {
        let names = self.names.lock().unwrap_or_else(|e| e.into_inner());
        match usize::try_from(surrogate - 1).ok().and_then(|i| names.get(i)) {
            Some(k) if !matches!(k, Key::Int(0)) => k.clone(),
            _ => Key::Int(surrogate),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_ids_are_their_own_surrogates_and_others_are_numbered_once() {
        let ids = Interner::default();
        assert_eq!(ids.surrogate(&Key::Int(42)), 42);
        let u = Key::Uuid(Uuid::from_u128(7));
        let a = ids.surrogate(&u);
        let b = ids.surrogate(&Key::Text("job-9".into()));
        assert_eq!((a, b), (1, 2));
        assert_eq!(ids.surrogate(&u), 1, "the same id keeps its number");
        assert_eq!(ids.key(1), u);
        assert_eq!(ids.key(2).show(), "job-9");
        assert_eq!(ids.key(42), Key::Int(42));
    }

    #[test]
    fn keys_go_back_in_the_type_the_server_asks_for() {
        let mut out = BytesMut::new();
        Key::Int(3).to_sql(&Type::INT2, &mut out).unwrap();
        assert_eq!(&out[..], &[0, 3]);
        assert!(Key::Int(70_000).to_sql(&Type::INT2, &mut BytesMut::new()).is_err(), "out of range is an error");
        let mut out = BytesMut::new();
        Key::Text("00000000-0000-0000-0000-000000000007".into()).to_sql(&Type::UUID, &mut out).unwrap();
        assert_eq!(out.len(), 16);
        let mut out = BytesMut::new();
        Key::Int(12).to_sql(&Type::TEXT, &mut out).unwrap();
        assert_eq!(&out[..], b"12");
    }
}
