//! A tiny async mutex for the single-threaded wasm world: requests of one site take turns, in the
//! order they asked for one.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::future::Future;
use std::rc::Rc;

use js_sys::{Function, Promise};
use wasm_bindgen::JsValue;
use wasm_bindgen_futures::JsFuture;

/// First come, first served.
#[derive(Default)]
pub struct Queue {
    state: Rc<State>,
}

#[derive(Default)]
struct State {
    busy: Cell<bool>,
    waiters: RefCell<VecDeque<Function>>,
}

/// Holding this means it is your turn; dropping it hands the turn to the next waiter.
pub struct Turn {
    state: Rc<State>,
}

impl Queue {
    /// Take the turn now if nobody holds it and nobody waits.
    pub fn try_acquire(&self) -> Option<Turn> {
        if self.state.busy.replace(true) {
            return None;
        }
        Some(Turn {
            state: self.state.clone(),
        })
    }

    /// Wait for our turn. The place in the line is taken when this is called, not when the
    /// future is first polled, so turns follow the order of the calls. The future must be
    /// awaited to the end (a turn handed to a dropped waiter would be lost).
    pub fn acquire(&self) -> impl Future<Output = Turn> {
        let state = self.state.clone();
        let wait = if state.busy.replace(true) {
            let promise = Promise::new(&mut |resolve: Function, _reject: Function| {
                state.waiters.borrow_mut().push_back(resolve);
            });
            Some(JsFuture::from(promise))
        } else {
            None
        };
        async move {
            if let Some(wait) = wait {
                // the turn is handed over directly: `busy` stays true
                let _ = wait.await;
            }
            Turn { state }
        }
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        let next = self.state.waiters.borrow_mut().pop_front();
        match next {
            Some(resolve) => {
                let _ = resolve.call0(&JsValue::NULL);
            }
            None => self.state.busy.set(false),
        }
    }
}
