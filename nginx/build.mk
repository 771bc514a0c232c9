# nginx/build.mk: build rules of nginx/ (included by the top Makefile).
