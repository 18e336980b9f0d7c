//! Runtime warnings of compiled code (integer division by zero, `//` overflow), as
//! NumPy gives them: each once per process and source location. The runtimes queue
//! them after a call ([`queue`]); the `appy` command prints them and the Python package
//! raises them as `RuntimeWarning`s ([`take_warnings`]).

use std::collections::HashSet;
use std::sync::Mutex;

struct Queue {
    seen: HashSet<String>,
    pending: Vec<String>,
}

static QUEUE: Mutex<Option<Queue>> = Mutex::new(None);

/// Queues warning lines (`FILE:LINE:COL: warning: ...`); a line seen before is dropped.
pub fn queue(lines: Vec<String>) {
    if lines.is_empty() {
        return;
    }
    let mut q = QUEUE.lock().unwrap_or_else(|e| e.into_inner());
    let q = q.get_or_insert_with(|| Queue {
        seen: HashSet::new(),
        pending: vec![],
    });
    for l in lines {
        if q.seen.insert(l.clone()) {
            q.pending.push(l);
        }
    }
}

/// The warnings queued since the last call.
pub fn take_warnings() -> Vec<String> {
    let mut q = QUEUE.lock().unwrap_or_else(|e| e.into_inner());
    q.as_mut().map(|q| std::mem::take(&mut q.pending)).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    #[test]
    fn each_warning_once() {
        super::queue(vec!["a.py:1:1: warning: x".into(), "a.py:1:1: warning: x".into()]);
        super::queue(vec!["a.py:1:1: warning: x".into()]);
        let w = super::take_warnings();
        assert_eq!(w.iter().filter(|l| l.starts_with("a.py:1:1")).count(), 1);
    }
}
