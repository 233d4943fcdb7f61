-- One row per release made on this database: what was published and what it cost.
CREATE TABLE IF NOT EXISTS $ledger (
    release_id        INTEGER PRIMARY KEY,
    created_at        TIMESTAMP NOT NULL,
    input_table       VARCHAR NOT NULL,
    output_table      VARCHAR NOT NULL,
    hierarchy         VARCHAR NOT NULL,
    tree              VARCHAR NOT NULL,
    domain_source     VARCHAR NOT NULL,
    mechanism         VARCHAR NOT NULL,
    guarantee         VARCHAR NOT NULL,  -- zCDP (rho composes by adding) or approxDP
    privacy           VARCHAR NOT NULL,
    rho               DOUBLE,            -- NULL for an (epsilon, delta)-DP mechanism
    epsilon           DOUBLE NOT NULL,
    delta             DOUBLE NOT NULL,
    conversion        VARCHAR NOT NULL,
    budget_given      VARCHAR NOT NULL,
    contribution      INTEGER NOT NULL,
    distinct_records  BOOLEAN NOT NULL,
    level_names       VARCHAR[] NOT NULL,
    level_sensitivity DOUBLE[] NOT NULL,
    level_rho         DOUBLE[] NOT NULL,
    level_sigma       DOUBLE[] NOT NULL,
    seeded            BOOLEAN NOT NULL,
    non_private       VARCHAR[] NOT NULL,
    library_version   VARCHAR NOT NULL,
    details           VARCHAR NOT NULL
)
