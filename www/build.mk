# www/build.mk: build rules of www/ (included by the top Makefile).
