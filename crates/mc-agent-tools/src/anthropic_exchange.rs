//! What the Anthropic preparations (whole, [`super::prepare`], and walked,
//! [`super::recent_walks`]) add to a client's request alike: our tools and their guidance.

use mc_engine::tools::Offer;
use mc_wire::anthropic::{BlockContent, ContentBlock, MessagesRequest, Tool};
use serde_json::{Map, Value};

/// Appends the tools `offer` names to the client's and its guidance to the system prompt.
pub fn add_tools(request: &mut MessagesRequest, offer: Offer) {
    let tools = request.tools.get_or_insert_with(Vec::new);
    for spec in offer.specs {
        let mut rest = Map::new();
        rest.insert("description".to_owned(), Value::from(spec.description));
        rest.insert(
            "input_schema".to_owned(),
            Value::Object(spec.input_schema.clone()),
        );
        tools.push(Tool::new(spec.name, rest));
    }
    let guidance = ContentBlock::text(offer.guidance);
    request.system = Some(match request.system.take() {
        None => BlockContent::Blocks(vec![guidance]),
        Some(BlockContent::Text(text)) => {
            BlockContent::Blocks(vec![ContentBlock::text(text), guidance])
        }
        Some(BlockContent::Blocks(mut blocks)) => {
            blocks.push(guidance);
            BlockContent::Blocks(blocks)
        }
    });
}
