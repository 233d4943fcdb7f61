-- use('__inftda_pub')
USE "__inftda_pub";
