package testserver

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"
)

// Auth says how an auth test server checks its clients. Set exactly one of
// User (with Password), Token, TLS, NKey or Creds.
type Auth struct {
	// User and Password: a user/password server.
	User, Password string
	// DenyJS denies User publishing to the JetStream API ($JS.API.>).
	DenyJS bool
	// Deny lists further subjects User may not publish to (such as
	// "$JS.API.CONSUMER.CREATE.>").
	Deny []string
	// Token: a token server.
	Token string
	// TLS: a server speaking TLS only, verifying client certificates, all
	// from a CA generated for the test.
	TLS bool
	// NKey: a server with one nkey user, whose seed is written to a file.
	NKey bool
	// Creds: a server in operator (JWT) mode with one account, JetStream
	// enabled for it, and one user whose credentials file is written.
	Creds bool
}

// AuthServer is a running auth test server and the files a client needs.
type AuthServer struct {
	*server.Server
	// URL is the client URL (tls:// for a TLS server).
	URL string
	// CA, Cert and Key are PEM files (TLS).
	CA, Cert, Key string
	// Seed is the user's nkey seed file (NKey).
	Seed string
	// Creds is the user's credentials file (Creds).
	Creds string
}

// NewAuth starts a JetStream server on a random loopback port that checks
// its clients as a says. Its store and the generated files go under dir,
// named after name. The caller shuts it down.
func NewAuth(dir, name string, a Auth) (*AuthServer, error) {
	as := &AuthServer{}
	store := filepath.Join(dir, name+"-store")
	var opt Options
	switch {
	case a.User != "":
		u := &server.User{Username: a.User, Password: a.Password}
		deny := a.Deny
		if a.DenyJS {
			deny = append(deny, "$JS.API.>")
		}
		if len(deny) > 0 {
			u.Permissions = &server.Permissions{Publish: &server.SubjectPermission{Deny: deny}}
		}
		opt = func(o *server.Options) { o.Users = []*server.User{u} }
	case a.Token != "":
		opt = func(o *server.Options) { o.Authorization = a.Token }
	case a.TLS:
		var err error
		as.CA, as.Cert, as.Key, err = writeTLSFiles(dir, name)
		if err != nil {
			return nil, err
		}
		tc, err := server.GenTLSConfig(&server.TLSConfigOpts{
			CertFile: filepath.Join(dir, name+"-server-cert.pem"), KeyFile: filepath.Join(dir, name+"-server-key.pem"),
			CaFile: as.CA, Verify: true, Timeout: 5,
		})
		if err != nil {
			return nil, fmt.Errorf("tls config: %w", err)
		}
		opt = func(o *server.Options) {
			o.TLS, o.TLSVerify, o.TLSConfig, o.TLSTimeout = true, true, tc, 5
		}
	case a.NKey:
		kp, err := nkeys.CreateUser()
		if err != nil {
			return nil, err
		}
		seed, _ := kp.Seed()
		pub, _ := kp.PublicKey()
		as.Seed = filepath.Join(dir, name+".nk")
		if err := os.WriteFile(as.Seed, append(seed, '\n'), 0o600); err != nil {
			return nil, err
		}
		opt = func(o *server.Options) { o.Nkeys = []*server.NkeyUser{{Nkey: pub}} }
	case a.Creds:
		var err error
		opt, as.Creds, err = operatorMode(dir, name)
		if err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("testserver.NewAuth: no auth mode chosen")
	}
	s, err := New(store, opt, func(o *server.Options) { o.ServerName = name })
	if err != nil {
		return nil, err
	}
	as.Server = s
	as.URL = s.ClientURL()
	if a.TLS {
		as.URL = fmt.Sprintf("tls://127.0.0.1:%d", s.Addr().(*net.TCPAddr).Port)
	}
	return as, nil
}

// operatorMode returns server options for JWT mode (an operator, a system
// account and one account with JetStream) and writes a user's credentials.
func operatorMode(dir, name string) (Options, string, error) {
	okp, _ := nkeys.CreateOperator()
	opub, _ := okp.PublicKey()
	sysKP, _ := nkeys.CreateAccount()
	sysPub, _ := sysKP.PublicKey()
	akp, _ := nkeys.CreateAccount()
	apub, _ := akp.PublicKey()
	ukp, _ := nkeys.CreateUser()
	upub, _ := ukp.PublicKey()
	useed, _ := ukp.Seed()

	oc := jwt.NewOperatorClaims(opub)
	oc.SystemAccount = sysPub
	if _, err := oc.Encode(okp); err != nil {
		return nil, "", fmt.Errorf("operator jwt: %w", err)
	}
	sc := jwt.NewAccountClaims(sysPub)
	sysJWT, err := sc.Encode(okp)
	if err != nil {
		return nil, "", fmt.Errorf("system account jwt: %w", err)
	}
	ac := jwt.NewAccountClaims(apub)
	ac.Limits.JetStreamLimits = jwt.JetStreamLimits{MemoryStorage: -1, DiskStorage: -1, Streams: -1, Consumer: -1, MaxAckPending: -1}
	accJWT, err := ac.Encode(okp)
	if err != nil {
		return nil, "", fmt.Errorf("account jwt: %w", err)
	}
	uc := jwt.NewUserClaims(upub)
	userJWT, err := uc.Encode(akp)
	if err != nil {
		return nil, "", fmt.Errorf("user jwt: %w", err)
	}
	creds, err := jwt.FormatUserConfig(userJWT, useed)
	if err != nil {
		return nil, "", err
	}
	path := filepath.Join(dir, name+".creds")
	if err := os.WriteFile(path, creds, 0o600); err != nil {
		return nil, "", err
	}
	res := &server.MemAccResolver{}
	if err := res.Store(sysPub, sysJWT); err != nil {
		return nil, "", err
	}
	if err := res.Store(apub, accJWT); err != nil {
		return nil, "", err
	}
	return func(o *server.Options) {
		o.TrustedOperators = []*jwt.OperatorClaims{oc}
		o.SystemAccount = sysPub
		o.AccountResolver = res
	}, path, nil
}

// writeTLSFiles generates a CA, a server certificate for 127.0.0.1 and
// localhost, and a client certificate, and writes them as PEM files under
// dir. It returns the CA file and the client certificate and key files.
func writeTLSFiles(dir, name string) (ca, cert, key string, err error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", "", err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name + " test CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return "", "", "", err
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return "", "", "", err
	}
	ca = filepath.Join(dir, name+"-ca.pem")
	if err := writePEM(ca, "CERTIFICATE", caDER); err != nil {
		return "", "", "", err
	}
	leaf := func(serial int64, cn string, usage x509.ExtKeyUsage, certFile, keyFile string) error {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return err
		}
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial),
			Subject:      pkix.Name{CommonName: cn},
			NotBefore:    now.Add(-time.Hour),
			NotAfter:     now.Add(24 * time.Hour),
			KeyUsage:     x509.KeyUsageDigitalSignature,
			ExtKeyUsage:  []x509.ExtKeyUsage{usage},
			DNSNames:     []string{"localhost"},
			IPAddresses:  []net.IP{net.ParseIP("127.0.0.1"), net.IPv6loopback},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &k.PublicKey, caKey)
		if err != nil {
			return err
		}
		kb, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			return err
		}
		if err := writePEM(certFile, "CERTIFICATE", der); err != nil {
			return err
		}
		return writePEM(keyFile, "PRIVATE KEY", kb)
	}
	if err := leaf(2, "localhost", x509.ExtKeyUsageServerAuth,
		filepath.Join(dir, name+"-server-cert.pem"), filepath.Join(dir, name+"-server-key.pem")); err != nil {
		return "", "", "", err
	}
	cert, key = filepath.Join(dir, name+"-client-cert.pem"), filepath.Join(dir, name+"-client-key.pem")
	if err := leaf(3, "jsctl test client", x509.ExtKeyUsageClientAuth, cert, key); err != nil {
		return "", "", "", err
	}
	return ca, cert, key, nil
}

func writePEM(path, typ string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600)
}
