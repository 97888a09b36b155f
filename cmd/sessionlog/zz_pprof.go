package main

import (
	"net/http"
	_ "net/http/pprof"
	"os"
)

func init() {
	if a := os.Getenv("SL_PPROF"); a != "" {
		go http.ListenAndServe(a, nil)
	}
}
