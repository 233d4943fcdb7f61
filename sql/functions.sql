-- The SQL functions of inftda_sql.register(con): temporary macros (per connection, never
-- written into the database file) over the vectorised Python UDFs named inftda_<function>.
-- The macros give the functions named and default parameters (dp_sigma(rho := 0.5,
-- sensitivity := sqrt(2))), which DuckDB's Python UDFs lack; each passes every argument to
-- its UDF once, so an argument is evaluated once per row: a check in a macro would evaluate
-- it twice, and a volatile argument (a noisy value) would then be drawn twice.
-- Signatures and documentation: SQL_FUNCTIONS in inftda_sql/engines/duckdb/functions.py.

CREATE OR REPLACE TEMP MACRO dp_rho(epsilon, delta, conversion := 'tight') AS
    inftda_dp_rho(epsilon, delta, conversion);

CREATE OR REPLACE TEMP MACRO dp_epsilon(rho, delta, conversion := 'tight') AS
    inftda_dp_epsilon(rho, delta, conversion);

CREATE OR REPLACE TEMP MACRO dp_sensitivity(privacy := 'bounded', contribution := 1, distinct_leaves := false, leaf := false) AS
    inftda_dp_sensitivity(privacy, contribution, distinct_leaves, leaf);

CREATE OR REPLACE TEMP MACRO dp_sigma(rho, sensitivity) AS
    inftda_dp_sigma(rho, sensitivity);

CREATE OR REPLACE TEMP MACRO dp_discrete_gaussian(sigma) AS
    inftda_dp_discrete_gaussian(sigma);

CREATE OR REPLACE TEMP MACRO dp_discrete_laplace(scale) AS
    inftda_dp_discrete_laplace(scale);

CREATE OR REPLACE TEMP MACRO intopt(noisy, target, descending := false) AS
    inftda_intopt(noisy, target, descending);
