//! The sweep's grid: `--set key=v1,v2,…` lists become axes, a single value
//! applies to every cell, and each cell is the list of ordinary `--set`
//! overrides that `scenario::plan_from_file` validates like any other, so a
//! typo or a bad value gets the same file/key error as `queuebench run`.

use crate::error::{Error, Invalid};

/// One swept key and its values in the order given.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Axis {
    pub key: String,
    pub values: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Grid {
    /// `key=value` overrides every cell gets.
    pub fixed: Vec<String>,
    pub axes: Vec<Axis>,
}

/// One point of the grid: its values, one per axis, in axis order.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Cell {
    pub index: usize,
    pub params: Vec<(String, String)>,
}

impl Cell {
    /// The cell's own `--set` overrides.
    pub(crate) fn sets(&self) -> Vec<String> {
        self.params.iter().map(|(k, v)| format!("{k}={v}")).collect()
    }

    /// `workers.batch=10 lease.duration=90s`
    pub(crate) fn label(&self) -> String {
        self.sets().join(" ")
    }

    #[cfg(test)]
    pub(crate) fn value(&self, key: &str) -> Option<&str> {
        self.params.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }
}

/// Reads the `--set` arguments of a sweep. A key may be given once; a value
/// list splits at commas outside quotes, brackets and braces, so
/// `workers.work={ p50 = "8s", p99 = "70s" }` stays one value.
pub(crate) fn parse(sets: &[String]) -> Result<Grid, Error> {
    let mut grid = Grid::default();
    let mut seen: Vec<String> = Vec::new();
    for set in sets {
        let bad = |reason: String| Error::FlagValue {
            flag: "--set".into(),
            value: Some(set.clone()),
            invalid: Invalid::new(reason),
        };
        let (key, list) =
            set.split_once('=').ok_or_else(|| bad("expected key=value[,value…], e.g. workers.batch=1,10".into()))?;
        let key = key.trim();
        if key.is_empty() {
            return Err(bad("the key is empty".into()));
        }
        if seen.iter().any(|k| k == key) {
            return Err(bad(format!("`{key}` is given twice; list its values once, e.g. {key}=a,b")));
        }
        seen.push(key.to_string());
        let values = split_values(list);
        if values.iter().any(|v| v.is_empty()) {
            return Err(bad(format!("an empty value in the list of `{key}`")));
        }
        match values.as_slice() {
            [one] => grid.fixed.push(format!("{key}={one}")),
            _ => grid.axes.push(Axis { key: key.to_string(), values }),
        }
    }
    Ok(grid)
}

impl Grid {
    /// Every combination, the first axis varying slowest.
    pub(crate) fn cells(&self) -> Vec<Cell> {
        let mut cells: Vec<Vec<(String, String)>> = vec![Vec::new()];
        for axis in &self.axes {
            cells = cells
                .into_iter()
                .flat_map(|c| {
                    axis.values.iter().map(move |v| {
                        let mut c = c.clone();
                        c.push((axis.key.clone(), v.clone()));
                        c
                    })
                })
                .collect();
        }
        cells.into_iter().enumerate().map(|(index, params)| Cell { index, params }).collect()
    }

    pub(crate) fn axis(&self, key: &str) -> Option<&Axis> {
        self.axes.iter().find(|a| a.key == key)
    }
}

fn split_values(list: &str) -> Vec<String> {
    let (mut out, mut cur, mut depth, mut quote) = (Vec::new(), String::new(), 0i32, None::<char>);
    for ch in list.chars() {
        match (quote, ch) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(ch),
            (None, '[' | '{') => depth += 1,
            (None, ']' | '}') => depth -= 1,
            (None, ',') if depth == 0 => {
                out.push(cur.trim().to_string());
                cur.clear();
                continue;
            }
            _ => {}
        }
        cur.push(ch);
    }
    out.push(cur.trim().to_string());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sets(s: &[&str]) -> Vec<String> {
        s.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn two_lists_make_four_cells_first_axis_slowest() {
        let g = parse(&sets(&["a=1,2", "b=x,y", "c=5"])).unwrap();
        assert_eq!(g.fixed, ["c=5"]);
        let cells = g.cells();
        assert_eq!(cells.len(), 4);
        let labels: Vec<String> = cells.iter().map(Cell::label).collect();
        assert_eq!(labels, ["a=1 b=x", "a=1 b=y", "a=2 b=x", "a=2 b=y"]);
        assert_eq!(cells[3].value("b"), Some("y"));
    }

    #[test]
    fn commas_inside_tables_arrays_and_quotes_stay() {
        let g = parse(&sets(&[r#"workers.work={ p50 = "8s", p99 = "70s" },5ms"#, r#"x=["1s","2s"]"#, r#"y="a,b""#]))
            .unwrap();
        assert_eq!(g.axes[0].values, [r#"{ p50 = "8s", p99 = "70s" }"#, "5ms"]);
        assert_eq!(g.fixed, [r#"x=["1s","2s"]"#, r#"y="a,b""#]);
    }

    #[test]
    fn no_lists_is_one_cell() {
        let g = parse(&sets(&["a=1"])).unwrap();
        assert_eq!(g.cells().len(), 1);
        assert!(g.cells()[0].params.is_empty());
    }

    #[test]
    fn bad_lists_name_the_key() {
        assert!(parse(&sets(&["a"])).unwrap_err().to_string().contains("expected key=value"));
        assert!(parse(&sets(&["a=1,,2"])).unwrap_err().to_string().contains("empty value in the list of `a`"));
        assert!(parse(&sets(&["a=1,2", "a=3"])).unwrap_err().to_string().contains("`a` is given twice"));
        assert!(parse(&sets(&["=1,2"])).unwrap_err().to_string().contains("key is empty"));
    }
}
