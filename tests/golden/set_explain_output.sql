-- set_explain_output('all')
SET explain_output = 'all';
