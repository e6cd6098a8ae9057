//! argv arrays: `["mysql", "-u", "root", "-pSECRET"]`, `["--token", "x"]`;
//! option values that only make sense across neighbouring items.

use super::*;

#[cfg(test)]
#[path = "argv_tests.rs"]
mod tests;

/// Joins the string elements of an array as a command line, detects command
/// options across elements and maps positional hits back to the element.
fn argv_positional(items: &[&Value], location: &str) -> Vec<(usize, Hit)> {
    let mut offsets: Vec<(usize, usize, usize)> = Vec::new(); // (index, start, end)
    let mut joined = String::new();
    for (index, item) in items.iter().enumerate() {
        let Value::String(s) = item else {
            continue;
        };
        if !joined.is_empty() {
            joined.push(' ');
        }
        // Quote elements with whitespace so a value element stays whole.
        let quote = if !s.bytes().any(|c| c.is_ascii_whitespace()) {
            None
        } else if !s.contains('"') {
            Some('"')
        } else if !s.contains('\'') {
            Some('\'')
        } else {
            None
        };
        if let Some(q) = quote {
            joined.push(q);
        }
        let start = joined.len();
        joined.push_str(s);
        offsets.push((index, start, joined.len()));
        if let Some(q) = quote {
            joined.push(q);
        }
    }
    if offsets.len() < 2 {
        return Vec::new();
    }
    let mut scan = Scan::new(&joined, location);
    scan_command_options(&mut scan);
    let mut out = Vec::new();
    for hit in scan.hits {
        let Some((start, end)) = hit.span else {
            continue;
        };
        if let Some(&(index, elem_start, _)) =
            offsets.iter().find(|&&(_, a, b)| a <= start && end <= b)
        {
            out.push((
                index,
                Hit {
                    span: Some((start - elem_start, end - elem_start)),
                    found: hit.found,
                },
            ));
        }
    }
    out
}

pub(super) fn argv_hits(items: &[&Value], location: &str) -> Vec<Hit> {
    argv_positional(items, location)
        .into_iter()
        .map(|(_, hit)| hit)
        .collect()
}

pub(crate) fn argv_extra_spans(items: &[&Value], location: &str) -> Vec<(usize, Span)> {
    argv_positional(items, location)
        .into_iter()
        .filter_map(|(index, hit)| {
            let (start, end) = hit.span?;
            Some((
                index,
                Span {
                    start,
                    end,
                    own_end: end,
                    name: hit.found.name(),
                    binding: false,
                },
            ))
        })
        .collect()
}
