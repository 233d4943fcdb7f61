-- The total privacy budget a data owner allows for an input table (one row per input).
CREATE TABLE IF NOT EXISTS $budgets (
    input_table VARCHAR PRIMARY KEY,
    rho         DOUBLE NOT NULL,     -- zCDP: releases compose by adding their rho
    epsilon     DOUBLE NOT NULL,     -- the same budget as (epsilon, delta)-DP, for reading
    delta       DOUBLE NOT NULL,
    conversion  VARCHAR NOT NULL,
    set_at      TIMESTAMP NOT NULL
)
