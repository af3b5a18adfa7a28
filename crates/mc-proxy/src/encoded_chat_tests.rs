use mc_core::{Part, Role};
use proptest::prelude::*;
use serde_json::{Value, json};

use super::*;
use crate::chat_incremental::RecentChats;

/// The reference: every message rendered, paired from the end, and the request encoded whole.
fn whole(request: &ChatRequest, messages: &[Arc<Message>]) -> Vec<u8> {
    let mut request = request.clone();
    let client = request.messages.split_off(request.instruction_count());
    let mut rendered: Vec<ChatMessage> = messages
        .iter()
        .flat_map(|message| openai::from_message(message))
        .collect();
    for (ours, theirs) in rendered.iter_mut().rev().zip(client.iter().rev()) {
        if same_message(ours, theirs) {
            ours.adopt_client_fields(theirs);
        }
    }
    request.messages.extend(rendered);
    if request.is_stream() && !request.includes_stream_usage() {
        request.set_stream_usage(true);
    }
    request.encode()
}

/// A neutral message of kind `kind % 5`, numbered `n`: a question, a call, one result, two
/// results, or an empty message.
fn neutral(kind: u8, n: usize) -> Message {
    let result = |id: String, text: String| Part::ToolResult {
        call_id: id,
        content: vec![Part::text(text)],
        is_error: false,
    };
    match kind % 5 {
        0 => Message::new(Role::User, vec![Part::text(format!("question {n}"))]),
        1 => Message::new(
            Role::Assistant,
            vec![
                Part::text(format!("looking {n}")),
                Part::ToolCall {
                    id: format!("call_{n}"),
                    name: "bash".into(),
                    input: json!({"cmd": format!("ls {n}")}),
                },
            ],
        ),
        2 => Message::new(
            Role::User,
            vec![result(format!("call_{n}"), format!("out \"{n}\"\n"))],
        ),
        3 => Message::new(
            Role::User,
            vec![
                result(format!("a_{n}"), format!("first {n}")),
                result(format!("b_{n}"), format!("second {n}")),
            ],
        ),
        _ => Message::new(Role::Assistant, Vec::new()),
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
    /// The client sends message `at` with another field of its own.
    EditClient(usize),
    /// The client's instructions change.
    NewInstructions,
    /// The client asks for the usage chunk itself from now on.
    AskUsage,
    /// The client sends another parameter outside the list (a new `temperature`).
    NewParameter,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => prop::collection::vec(any::<u8>(), 1..5).prop_map(Step::Append),
        2 => any::<usize>().prop_map(Step::Change),
        1 => (1usize..6).prop_map(Step::Compact),
        1 => any::<usize>().prop_map(Step::EditClient),
        1 => Just(Step::NewInstructions),
        1 => Just(Step::AskUsage),
        1 => Just(Step::NewParameter),
    ]
}

/// A session's two sides: the client's messages (as JSON, its own fields on some) and the
/// engine's.
struct Session {
    instructions: String,
    usage: bool,
    temperature: u32,
    client: Vec<Value>,
    engine: Vec<Arc<Message>>,
    next: usize,
}

impl Session {
    fn new() -> Self {
        Self {
            instructions: "be brief".into(),
            usage: false,
            temperature: 0,
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
                    for (at, chat) in openai::from_message(&message).into_iter().enumerate() {
                        let mut value = serde_json::to_value(&chat).unwrap();
                        if (self.next + at).is_multiple_of(2) {
                            value["x_client"] = json!(self.next);
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
                self.client[at]["x_edited"] = json!(self.next);
            }
            Step::NewInstructions => self.instructions.push_str(" more"),
            Step::AskUsage => self.usage = true,
            Step::NewParameter => self.temperature += 1,
            Step::Change(_) | Step::EditClient(_) => {}
        }
    }

    fn body(&self) -> ChunkedBody {
        let mut messages = vec![json!({"role": "system", "content": self.instructions})];
        messages.extend(self.client.iter().cloned());
        let mut body = json!({"model": "m", "stream": true, "messages": messages,
            "temperature": self.temperature});
        if self.usage {
            body["stream_options"] = json!({"include_usage": true});
        }
        ChunkedBody::from(serde_json::to_vec(&body).unwrap())
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Over growing, dropped, compacted and edited sessions, the body written from the
    /// previous one is the body rendered whole, and the client's messages come back whole.
    #[test]
    fn reusing_the_previous_body_writes_the_whole_render(
        steps in prop::collection::vec(step(), 1..24),
    ) {
        let mut session = Session::new();
        let recent = RecentChats::default();
        let mut previous: Option<EncodedChat> = None;
        for step in &steps {
            session.apply(step);
            let body = session.body();
            let decoded = recent.decode(&body, None).unwrap();
            let expected = whole(&decoded.request, &session.engine);
            let sent = decoded.request.messages.clone();
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
            prop_assert_eq!(&rendered.client_messages, &sent);
            if let Some(layout) = decoded.layout {
                recent.remember(layout, rendered.client_messages, decoded.conversation, decoded.chain);
            }
            previous = rendered.encoded;
        }
    }
}

/// The session's body decoded alone, and a pairing of its client messages unshifted.
fn decoded_alone(session: &Session) -> crate::chat_incremental::ChatDecoded {
    RecentChats::default()
        .decode(&session.body(), None)
        .unwrap()
}

fn unshifted<'a>(decoded: &'a crate::chat_incremental::ChatDecoded) -> Pairing<'a> {
    Pairing {
        client: &decoded.request.messages[1..],
        offset: 0,
        layout: decoded.layout.as_ref(),
    }
}

#[test]
fn an_unchanged_message_is_copied_and_a_changed_client_field_is_not() {
    let mut session = Session::new();
    session.apply(&Step::Append(vec![0, 1, 2]));
    let first = decoded_alone(&session);
    let one = render(first.request, &session.engine, first.layout.as_ref(), None);
    let one = one.encoded.unwrap();

    session.apply(&Step::Append(vec![0]));
    let second = decoded_alone(&session);
    assert!(
        one.reusable(&one.kept[1], 1, &unshifted(&second)).is_some(),
        "the call, unchanged"
    );
    assert!(
        one.reusable(&one.kept[1], 2, &unshifted(&second)).is_none(),
        "moved in the list"
    );

    session.apply(&Step::EditClient(1));
    let third = decoded_alone(&session);
    assert!(one.reusable(&one.kept[0], 0, &unshifted(&third)).is_some());
    assert!(
        one.reusable(&one.kept[1], 1, &unshifted(&third)).is_none(),
        "its client message changed"
    );
}
