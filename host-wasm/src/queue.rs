//! A tiny async mutex for the single-threaded wasm world: requests of one site take turns.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
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
    /// Wait for our turn.
    pub async fn acquire(&self) -> Turn {
        if self.state.busy.replace(true) {
            let state = self.state.clone();
            let promise = Promise::new(&mut |resolve: Function, _reject: Function| {
                state.waiters.borrow_mut().push_back(resolve);
            });
            // the turn is handed over directly: `busy` stays true
            let _ = JsFuture::from(promise).await;
        }
        Turn {
            state: self.state.clone(),
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
