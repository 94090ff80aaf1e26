// Package pushtest is a browser's side of Web Push for tests: a device's
// subscription keys, and the RFC 8291 (aes128gcm) decryption of what a
// push service received, written from the RFC (not from the sender's
// library), so a test reads the push as the browser would.
package pushtest

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
)

// Device is a browser's push subscription keys.
type Device struct {
	Key  *ecdh.PrivateKey
	Auth []byte
}

// NewDevice makes fresh keys, as a browser does when it subscribes.
func NewDevice() (Device, error) {
	k, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		return Device{}, err
	}
	auth := make([]byte, 16)
	_, _ = rand.Read(auth)
	return Device{Key: k, Auth: auth}, nil
}

// P256dh and AuthKey are the keys as PushSubscription.toJSON() has them.
func (d Device) P256dh() string {
	return base64.RawURLEncoding.EncodeToString(d.Key.PublicKey().Bytes())
}
func (d Device) AuthKey() string { return base64.RawURLEncoding.EncodeToString(d.Auth) }

// Decrypt opens one aes128gcm push body (RFC 8291 §3.4, RFC 8188) with
// the receiver's private key and auth secret, and returns the plaintext
// without its padding.
func Decrypt(body []byte, ua *ecdh.PrivateKey, auth []byte) ([]byte, error) {
	if len(body) < 21 {
		return nil, errors.New("pushtest: short body")
	}
	salt, rs, idlen := body[:16], binary.BigEndian.Uint32(body[16:20]), int(body[20])
	if len(body) < 21+idlen || rs < 18 {
		return nil, errors.New("pushtest: bad header")
	}
	asPub, ct := body[21:21+idlen], body[21+idlen:]
	if len(ct) > int(rs) {
		return nil, errors.New("pushtest: more than one record")
	}
	as, err := ecdh.P256().NewPublicKey(asPub)
	if err != nil {
		return nil, err
	}
	shared, err := ua.ECDH(as)
	if err != nil {
		return nil, err
	}
	info := append(append([]byte("WebPush: info\x00"), ua.PublicKey().Bytes()...), asPub...)
	ikm, err := hkdf.Key(sha256.New, shared, auth, string(info), 32)
	if err != nil {
		return nil, err
	}
	cek, err := hkdf.Key(sha256.New, ikm, salt, "Content-Encoding: aes128gcm\x00", 16)
	if err != nil {
		return nil, err
	}
	nonce, err := hkdf.Key(sha256.New, ikm, salt, "Content-Encoding: nonce\x00", 12)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(cek)
	if err != nil {
		return nil, err
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	plain, err := gcm.Open(nil, nonce, ct, nil)
	if err != nil {
		return nil, err
	}
	plain = bytes.TrimRight(plain, "\x00")
	if len(plain) == 0 || plain[len(plain)-1] != 2 {
		return nil, errors.New("pushtest: no last-record delimiter")
	}
	return plain[:len(plain)-1], nil
}
