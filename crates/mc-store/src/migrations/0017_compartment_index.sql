-- Schema v17: each compartment's index, the files, commands and names its range used, chosen
-- from the raw messages when it was published (mc_core::historian::range_index) and rendered
-- under its heading. JSON: {"files": [...], "ran": [...], "names": [...]}. Compartments
-- published before this version have an empty index (the head renders as it did); `recomp`
-- rebuilds them with one.
ALTER TABLE compartments ADD COLUMN range_index TEXT NOT NULL DEFAULT '{}';
ALTER TABLE staged_compartments ADD COLUMN range_index TEXT NOT NULL DEFAULT '{}';

-- A name the index lists is found by search: the compartment's indexed body holds the index
-- after its full tier, so `search parse_card` (or the agent's ctx_search) finds the range that
-- used it and names it for ctx_expand.
DROP TRIGGER compartment_search_insert;
CREATE TRIGGER compartment_search_insert AFTER INSERT ON compartments
BEGIN
    INSERT INTO compartment_search (title, body, session_id, start_ordinal)
    VALUES (new.title, new.tier_full || char(10) || new.range_index, new.session_id,
            new.start_ordinal);
END;
