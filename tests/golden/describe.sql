-- describe('(SELECT o_reg, n FROM trips)')
DESCRIBE SELECT * FROM (SELECT o_reg, n FROM trips);
