-- The dreamer's leases, one per conflict domain (`memories:<project>`), shared by every proxy
-- of the team so that one dreamer at a time changes a project's memories. Times are the
-- server's clock in unix milliseconds: proxies on several machines never compare their own
-- clocks.
CREATE TABLE mc_dreamer_leases (
    domain      text   PRIMARY KEY,
    owner       text   NOT NULL,
    acquired_ms bigint NOT NULL,
    expires_ms  bigint NOT NULL
);
