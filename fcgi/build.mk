# fcgi/build.mk: build rules of fcgi/ (included by the top Makefile).
