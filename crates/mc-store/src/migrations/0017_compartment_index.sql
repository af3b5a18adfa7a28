-- Schema v17: each compartment's index, the files, commands and names its range used, chosen
-- from the raw messages when it was published (mc_core::historian::range_index) and rendered
-- under its heading. JSON: {"files": [...], "ran": [...], "names": [...]}. Compartments
-- published before this version have an empty index (the head renders as it did); `recomp`
-- rebuilds them with one.
ALTER TABLE compartments ADD COLUMN range_index TEXT NOT NULL DEFAULT '{}';
ALTER TABLE staged_compartments ADD COLUMN range_index TEXT NOT NULL DEFAULT '{}';
