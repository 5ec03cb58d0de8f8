package http_test

import (
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/actors"
	"github.com/intentd/intentd/crypto"
	"github.com/intentd/intentd/evidence"
	intenthttp "github.com/intentd/intentd/http"
	"github.com/intentd/intentd/persistence"
)

// A server is the handler over an engine; here over an in-memory store, signing
// receipts with a fixed key so that its id prints the same on every run. GET /info
// tells clients the key to pin and the limits the server holds requests to. Package
// client is the Go client of the routes it serves.
func ExampleNewServer() {
	store, err := persistence.Open("db", persistence.Options{FS: persistence.NewMemFS()})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	key, err := crypto.NewSigningKey(make([]byte, 32))
	if err != nil {
		log.Fatal(err)
	}
	cfg := actors.DefaultConfig()
	cfg.Store, cfg.Extractor, cfg.Prover = store, evidence.DefaultCatalog(), actors.ReceiptProver{Key: key}
	engine, err := actors.Open(cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer engine.Close()
	<-engine.Ready()

	info := intentd.Info{PublicKey: crypto.EncodeBase58(key.PublicKey()), KeyID: key.ID()}
	ts := httptest.NewServer(intenthttp.NewServer(engine, intenthttp.Options{Info: info}))
	defer ts.Close()

	resp, err := http.Get(ts.URL + "/info")
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	var got intentd.Info
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		log.Fatal(err)
	}
	fmt.Println("key id:", got.KeyID)
	fmt.Println("max body bytes:", got.MaxBodyBytes)
	fmt.Println("current api version:", got.APIVersion == intenthttp.APIVersion)
	// Output:
	// key id: 2KagShR4Usj2uARXJeDw7XJEKvQ3XDr84dC47hUB3Uyd
	// max body bytes: 1048576
	// current api version: true
}
