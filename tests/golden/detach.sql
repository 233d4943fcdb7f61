-- detach('__inftda_pub')
DETACH "__inftda_pub";
