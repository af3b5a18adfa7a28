use mc_core::{Part, Role};
use mc_wire::responses::{self, MessageItem};
use proptest::prelude::*;
use serde_json::{Value, json};

use super::*;
use crate::responses_incremental::RecentResponses;

/// The reference: every message rendered at once, each item given the fields of the client
/// item it stands for (message items paired from the end, calls and outputs by call id),
/// and the request encoded whole.
fn whole(request: &ResponsesRequest, messages: &[Arc<Message>]) -> Vec<u8> {
    let mut request = request.clone();
    let keep = request.instruction_count();
    let mut kept = match request.input.take() {
        Some(Input::Items(items)) => items,
        _ => Vec::new(),
    };
    let client = kept.split_off(keep.min(kept.len()));
    let tools = request.tools.clone().unwrap_or_default();
    let is_custom = |name: &str| {
        tools
            .iter()
            .any(|tool| tool.is_custom() && tool.name() == Some(name))
    };
    let mut rendered = responses::from_conversation(messages.iter().map(|m| &**m), is_custom);
    let client_messages: Vec<&MessageItem> = client
        .iter()
        .filter_map(|item| match item {
            Item::Message(message) => Some(message),
            _ => None,
        })
        .collect();
    let mut paired = client_messages.iter().rev();
    for item in rendered.iter_mut().rev() {
        let theirs = match &*item {
            Item::Message(ours) => paired
                .next()
                .filter(|theirs| says_the_same(ours, theirs))
                .map(|theirs| Item::Message((**theirs).clone())),
            other => other.call_id().and_then(|call_id| {
                client
                    .iter()
                    .find(|c| c.type_name() == other.type_name() && c.call_id() == Some(call_id))
                    .cloned()
            }),
        };
        if let Some(theirs) = theirs {
            item.adopt_client_fields(&theirs);
        }
    }
    kept.extend(rendered);
    request.input = Some(Input::Items(kept));
    request.encode()
}

/// A neutral message of kind `kind % 6`, numbered `n`: a question, a reasoned function call,
/// its output, a custom tool's call, its output, or an answer in text.
fn neutral(kind: u8, n: usize) -> Message {
    let result = |id: String| Part::ToolResult {
        call_id: id,
        content: vec![Part::text(format!("out \"{n}\""))],
        is_error: false,
    };
    match kind % 6 {
        0 => Message::new(Role::User, vec![Part::text(format!("question {n}"))]),
        1 => Message::new(
            Role::Assistant,
            vec![
                Part::Unknown {
                    type_name: "reasoning".into(),
                    raw: json!({"type": "reasoning", "id": format!("rs_{n}"), "summary": [], "encrypted_content": "x"}),
                },
                Part::ToolCall {
                    id: format!("call_{n}"),
                    name: "bash".into(),
                    input: json!({"cmd": format!("ls {n}")}),
                },
            ],
        ),
        2 => Message::new(
            Role::Tool,
            vec![result(format!("call_{}", n.saturating_sub(1)))],
        ),
        3 => Message::new(
            Role::Assistant,
            vec![Part::ToolCall {
                id: format!("patch_{n}"),
                name: "apply_patch".into(),
                input: Value::String(format!("*** patch {n}")),
            }],
        ),
        4 => Message::new(
            Role::Tool,
            vec![result(format!("patch_{}", n.saturating_sub(1)))],
        ),
        _ => Message::new(Role::Assistant, vec![Part::text(format!("done {n}"))]),
    }
}

/// One step of a session: what the client sends next and what the engine returns.
#[derive(Debug, Clone)]
enum Step {
    /// New messages of these kinds on both sides.
    Append(Vec<u8>),
    /// The engine renders message `at` differently (a drop).
    Change(usize),
    /// The engine replaces its first `n` messages by one summary.
    Compact(usize),
    /// The client sends item `at` with another field of its own.
    EditClient(usize),
    /// The client offers `apply_patch` as a custom tool, or stops.
    ToggleCustom,
    /// The client no longer sends its first `n` items (it compacted them away).
    ClientForgets(usize),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => prop::collection::vec(any::<u8>(), 1..5).prop_map(Step::Append),
        2 => any::<usize>().prop_map(Step::Change),
        1 => (1usize..6).prop_map(Step::Compact),
        2 => any::<usize>().prop_map(Step::EditClient),
        1 => Just(Step::ToggleCustom),
        1 => (1usize..4).prop_map(Step::ClientForgets),
    ]
}

/// A session's two sides: the client's items (as JSON, its own fields on some) and the
/// engine's messages.
struct Session {
    custom: bool,
    client: Vec<Value>,
    engine: Vec<Arc<Message>>,
    next: usize,
}

impl Session {
    fn new() -> Self {
        Self {
            custom: true,
            client: Vec::new(),
            engine: Vec::new(),
            next: 0,
        }
    }

    fn apply(&mut self, step: &Step) {
        match step {
            Step::Append(kinds) => {
                for &kind in kinds {
                    let message = neutral(kind, self.next);
                    let is_custom = |name: &str| self.custom && name == "apply_patch";
                    for item in responses::from_conversation([&message], is_custom) {
                        let mut value = serde_json::to_value(&item).unwrap();
                        if self.client.len().is_multiple_of(2) {
                            value["id"] = json!(format!("it_{}", self.client.len()));
                        }
                        self.client.push(value);
                    }
                    self.engine.push(Arc::new(message));
                    self.next += 1;
                }
            }
            Step::Change(at) if !self.engine.is_empty() => {
                let at = at % self.engine.len();
                self.engine[at] = Arc::new(Message::new(
                    Role::User,
                    vec![Part::text(format!("[dropped {at}]"))],
                ));
            }
            Step::Compact(n) => {
                let n = (*n).min(self.engine.len());
                let summary = Arc::new(Message::new(Role::User, vec![Part::text("summary")]));
                self.engine.splice(..n, [summary]);
            }
            Step::EditClient(at) if !self.client.is_empty() => {
                let at = at % self.client.len();
                self.client[at]["status"] = json!(format!("edited {}", self.next));
            }
            Step::ToggleCustom => self.custom = !self.custom,
            Step::ClientForgets(n) => {
                let n = (*n).min(self.client.len());
                self.client.drain(..n);
            }
            Step::Change(_) | Step::EditClient(_) => {}
        }
    }

    fn body(&self) -> ChunkedBody {
        let mut input = vec![json!({"role": "developer", "content": "be brief"})];
        input.extend(self.client.iter().cloned());
        let mut tools = vec![json!({"type": "function", "name": "bash", "parameters": {}})];
        if self.custom {
            tools.push(json!({"type": "custom", "name": "apply_patch"}));
        }
        let body = json!({"model": "gpt-5", "instructions": "rules", "input": input,
            "tools": tools, "store": false, "stream": true});
        ChunkedBody::from(serde_json::to_vec(&body).unwrap())
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Over growing, dropped, compacted and edited sessions, with the custom tool coming and
    /// going, the body written from the previous one is the body rendered whole, and the
    /// client's items come back whole.
    #[test]
    fn reusing_the_previous_body_writes_the_whole_render(
        steps in prop::collection::vec(step(), 1..24),
    ) {
        let mut session = Session::new();
        let recent = RecentResponses::default();
        let mut previous: Option<EncodedResponses> = None;
        for step in &steps {
            session.apply(step);
            let body = session.body();
            let decoded = recent.decode(&body, None).unwrap();
            let expected = whole(&decoded.request, &session.engine);
            let sent = match &decoded.request.input {
                Some(Input::Items(items)) => items.clone(),
                _ => Vec::new(),
            };
            let rendered = render(
                decoded.request,
                &session.engine,
                decoded.layout.as_ref(),
                previous.take(),
            );
            let body = rendered.body.to_bytes();
            prop_assert_eq!(
                String::from_utf8_lossy(&body),
                String::from_utf8_lossy(&expected)
            );
            prop_assert_eq!(&rendered.client_items, &sent);
            if let Some(layout) = decoded.layout {
                recent.remember(layout, rendered.client_items, decoded.conversation, decoded.chain);
            }
            previous = rendered.encoded;
        }
    }
}

/// Every message of `session` rendered now, as a pass with no previous body renders them.
fn fresh_renderings(session: &Session) -> Vec<Rendering> {
    session
        .engine
        .iter()
        .map(|message| Rendering::Fresh(responses::from_conversation([&**message], |_| false)))
        .collect()
}

#[test]
fn a_grown_session_copies_its_earlier_messages() {
    let mut session = Session::new();
    session.apply(&Step::Append(vec![0, 1, 2, 5]));
    let recent = RecentResponses::default();
    let first = recent.decode(&session.body(), None).unwrap();
    let one = render(first.request, &session.engine, first.layout.as_ref(), None);
    let one = one.encoded.unwrap();

    session.apply(&Step::Append(vec![0]));
    let second = RecentResponses::default()
        .decode(&session.body(), None)
        .unwrap();
    let layout = second.layout.as_ref().unwrap();
    let client = match &second.request.input {
        Some(Input::Items(items)) => &items[1..],
        _ => unreachable!(),
    };
    let renderings = fresh_renderings(&session);
    let pairing = Pairing::new(client, &renderings);
    for index in 0..4 {
        let shapes = one.kept[index].shapes.clone();
        let first_message = one.kept[..index]
            .iter()
            .flat_map(|kept| kept.shapes.iter())
            .filter(|shape| **shape == Shape::Message)
            .count();
        let paired = pairing.pair(&shapes, first_message, None);
        assert!(
            one.reusable(&one.kept[index], &paired, layout).is_some(),
            "message {index}"
        );
    }
}

/// A message of the previous pass whose items pair with client items the incremental decode
/// found in the shared bytes is taken as it was, without pairing it again; the body is the
/// one rendered whole.
#[test]
fn a_message_in_the_shared_bytes_is_known_unchanged() {
    let mut session = Session::new();
    session.apply(&Step::Append(vec![0, 1, 2, 5]));
    let recent = RecentResponses::default();
    let first = recent.decode(&session.body(), None).unwrap();
    let one = render(first.request, &session.engine, first.layout.as_ref(), None);
    recent.remember(
        first.layout.unwrap(),
        one.client_items,
        first.conversation,
        first.chain,
    );
    let one = one.encoded.unwrap();

    session.apply(&Step::Append(vec![0]));
    let second = recent.decode(&session.body(), None).unwrap();
    let layout = second.layout.clone().unwrap();
    let client = match &second.request.input {
        Some(Input::Items(items)) => items[1..].to_vec(),
        _ => unreachable!(),
    };
    let renderings = fresh_renderings(&session);
    let pairing = Pairing::new(&client, &renderings);
    let mut message_items = 0;
    for index in 0..4 {
        let was = &one.kept[index];
        assert!(
            one.unchanged(was, message_items, &pairing, &layout),
            "message {index} not known unchanged"
        );
        message_items += message_item_count(&was.shapes);
    }
    // Counted from the wrong message item, a message item pairs with another client item.
    let messages_first = (0..4)
        .find(|&index| message_item_count(&one.kept[index].shapes) > 0)
        .unwrap();
    let before: usize = (0..messages_first)
        .map(|i| message_item_count(&one.kept[i].shapes))
        .sum();
    let was = &one.kept[messages_first];
    assert!(!one.unchanged(was, before + 1, &pairing, &layout));

    let expected = whole(&second.request, &session.engine);
    let rendered = render(second.request, &session.engine, Some(&layout), Some(one));
    assert_eq!(rendered.body.to_bytes(), expected);
}
