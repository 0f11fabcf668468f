// golang-jwt contender for scripts/bench-compare: RFC 9068 access-token validation with the
// JWK set in hand, on the tokens of Compare/python/accesstokens.py.
//
//	go run main.go FILE COUNT
//
// Each token: signature with the set's key named by kid, typ at+jwt, alg in the allow-list
// (the file's one), iss, aud, exp/nbf/iat with 60 s of leeway, sub, jti and client_id
// present, scope granting "read". Each iteration takes the next token. Prints
// "<count> <seconds> <CPU seconds>" (the process's user and system time) after a warm-up of 100 validations; exits 1 on any failure.
// Built offline against Debian's golang-github-golang-jwt-jwt-dev (v4, at the import path
// github.com/golang-jwt/jwt under GOPATH=/usr/share/gocode, GO111MODULE=off).
package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/golang-jwt/jwt"
)

const leeway = 60 * time.Second

type fixture struct {
	Issuer   string   `json:"issuer"`
	Audience string   `json:"audience"`
	Alg      string   `json:"alg"`
	JWKS     jwks     `json:"jwks"`
	Tokens   []string `json:"tokens"`
}

type jwks struct {
	Keys []map[string]interface{} `json:"keys"`
}

// accessTokenClaims: RFC 9068 §2.2. Valid is what the parser calls after the signature.
type accessTokenClaims struct {
	jwt.RegisteredClaims
	ClientID string `json:"client_id"`
	Scope    string `json:"scope"`
}

var issuer, audience string

func (c *accessTokenClaims) Valid() error {
	now := time.Now()
	switch {
	case !c.VerifyIssuer(issuer, true):
		return errors.New("iss")
	case !c.VerifyAudience(audience, true):
		return errors.New("aud")
	case !c.VerifyExpiresAt(now.Add(-leeway), true):
		return errors.New("exp")
	case !c.VerifyNotBefore(now.Add(leeway), false):
		return errors.New("nbf")
	case !c.VerifyIssuedAt(now.Add(leeway), true):
		return errors.New("iat")
	case c.Subject == "" || c.ID == "" || c.ClientID == "":
		return errors.New("sub, jti or client_id")
	}
	for _, scope := range strings.Fields(c.Scope) {
		if scope == "read" {
			return nil
		}
	}
	return errors.New("scope")
}

func b64(text string) []byte {
	data, err := base64.RawURLEncoding.DecodeString(text)
	if err != nil {
		panic(err)
	}
	return data
}

// publicKey reads an RSA or P-256 JWK (golang-jwt reads no JWKs itself).
func publicKey(jwk map[string]interface{}) interface{} {
	member := func(name string) []byte { text, _ := jwk[name].(string); return b64(text) }
	switch jwk["kty"] {
	case "RSA":
		return &rsa.PublicKey{N: new(big.Int).SetBytes(member("n")), E: int(new(big.Int).SetBytes(member("e")).Int64())}
	case "EC":
		return &ecdsa.PublicKey{Curve: elliptic.P256(), X: new(big.Int).SetBytes(member("x")), Y: new(big.Int).SetBytes(member("y"))}
	}
	panic(fmt.Sprint("unsupported key type ", jwk["kty"]))
}

// cpuSeconds is the process's user and system time (the garbage collector's included).
func cpuSeconds() float64 {
	var usage syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &usage); err != nil {
		panic(err)
	}
	return float64(usage.Utime.Nano()+usage.Stime.Nano()) / 1e9
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: FILE COUNT")
		os.Exit(2)
	}
	raw, err := os.ReadFile(os.Args[1])
	if err != nil {
		panic(err)
	}
	var f fixture
	if err := json.Unmarshal(raw, &f); err != nil {
		panic(err)
	}
	count, _ := strconv.Atoi(os.Args[2])
	issuer, audience = f.Issuer, f.Audience
	keys := map[string]interface{}{}
	for _, jwk := range f.JWKS.Keys {
		kid, _ := jwk["kid"].(string)
		keys[kid] = publicKey(jwk)
	}
	parser := jwt.NewParser(jwt.WithValidMethods([]string{f.Alg}))
	keyFunc := func(token *jwt.Token) (interface{}, error) {
		if typ, _ := token.Header["typ"].(string); !strings.EqualFold(typ, "at+jwt") && !strings.EqualFold(typ, "application/at+jwt") {
			return nil, errors.New("typ is not at+jwt")
		}
		kid, _ := token.Header["kid"].(string)
		if key, ok := keys[kid]; ok {
			return key, nil
		}
		return nil, errors.New("no key with the token's kid")
	}
	checks := 0
	validate := func(text string) {
		var claims accessTokenClaims
		token, err := parser.ParseWithClaims(text, &claims, keyFunc)
		if err != nil || !token.Valid {
			fmt.Fprintln(os.Stderr, "validation failed:", err)
			os.Exit(1)
		}
		checks += len(claims.Subject)
	}
	for i := 0; i < 100 && i < len(f.Tokens); i++ {
		validate(f.Tokens[i])
	}
	start, cpuStart := time.Now(), cpuSeconds()
	for i := 0; i < count; i++ {
		validate(f.Tokens[i%len(f.Tokens)])
	}
	elapsed, cpu := time.Since(start).Seconds(), cpuSeconds()-cpuStart
	if checks == 0 {
		os.Exit(1)
	}
	fmt.Printf("%d %.6f %.6f\n", count, elapsed, cpu)
}
