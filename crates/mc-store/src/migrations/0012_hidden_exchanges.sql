-- Schema v12: the exchanges the proxy ran with the model on a client's behalf (calls to its
-- own agent tools and their results), which the client never saw. Each is keyed by an anchor
-- hash of the conversation before it, so a later request of the same conversation gets the
-- same messages spliced back at the same place, byte for byte.
CREATE TABLE hidden_exchanges (
    anchor TEXT PRIMARY KEY NOT NULL,
    splice TEXT NOT NULL,
    created_ms INTEGER NOT NULL
) STRICT;
