-- Schema v24: the client's own prompt on each call, so the dashboard can price what the host's
-- own compaction would have cost on the same calls.
--
-- `client_prompt_tokens` is the prompt the client sent before the engine reduced it (system,
-- tools and every message), as the proxy estimated it for the pass; `client_fixed_tokens` is
-- the system prompt and tools within it, which a host's compaction keeps; `window_tokens` is
-- the context window the pass planned against, which the host compacts against. Rows written
-- before v24 have none of them: the estimate leaves those calls out and says so.
ALTER TABLE calls ADD COLUMN client_prompt_tokens INTEGER CHECK (client_prompt_tokens >= 0);
ALTER TABLE calls ADD COLUMN client_fixed_tokens INTEGER CHECK (client_fixed_tokens >= 0);
ALTER TABLE calls ADD COLUMN window_tokens INTEGER CHECK (window_tokens >= 0);
