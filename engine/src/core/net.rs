//! Where webhooks may go: the destination policy.
//!
//! A webhook URL names a host the server then connects to; without a policy, anyone who may
//! write a rule could make the server call its own loopback services, the machines of its
//! private network or a cloud metadata service. So loopback, private, link-local, shared (CGNAT),
//! unspecified, multicast and reserved addresses, IPv4 and IPv6 (also IPv4 written inside IPv6),
//! and `localhost` names are refused unless the operator allow-lists them
//! ([`DestinationPolicy::parse`]: addresses or CIDR ranges). The URL is read as the HTTP client
//! reads it (the `url` crate: `http://2130706433/` is `127.0.0.1`). A rule's URL is checked
//! when it is saved ([`DestinationPolicy::check_url`]); a host checks again every address a
//! name resolves to, at delivery ([`DestinationPolicy::check_ip`]).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipnet::IpNet;

/// The operator's allow-list of destinations that would otherwise be refused.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DestinationPolicy {
    allow: Vec<IpNet>,
}

/// Why `ip` is not a public address, if it is not.
pub fn internal_kind(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => v4_kind(v4),
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return v4_kind(v4);
            }
            let seg = v6.segments();
            if v6.is_loopback() {
                Some("loopback")
            } else if v6.is_unspecified() {
                Some("unspecified")
            } else if v6.is_multicast() {
                Some("multicast")
            } else if seg[0] & 0xffc0 == 0xfe80 {
                Some("link-local")
            } else if seg[0] & 0xfe00 == 0xfc00 {
                Some("private (unique local)")
            } else if seg[0..6] == [0x64, 0xff9b, 0, 0, 0, 0] || seg[0..6] == [0, 0, 0, 0, 0, 0] {
                // NAT64 and IPv4-compatible: the IPv4 address they carry decides
                let v4 = Ipv4Addr::new(
                    (seg[6] >> 8) as u8,
                    seg[6] as u8,
                    (seg[7] >> 8) as u8,
                    seg[7] as u8,
                );
                v4_kind(v4)
            } else if seg[0] == 0x2001 && seg[1] == 0x0db8 {
                Some("reserved (documentation)")
            } else {
                None
            }
        }
    }
}

fn v4_kind(ip: Ipv4Addr) -> Option<&'static str> {
    let o = ip.octets();
    if ip.is_loopback() {
        Some("loopback")
    } else if ip.is_private() {
        Some("private")
    } else if ip == Ipv4Addr::new(169, 254, 169, 254) {
        Some("metadata")
    } else if ip.is_link_local() {
        Some("link-local")
    } else if o[0] == 0 {
        Some("unspecified")
    } else if o[0] == 100 && (64..128).contains(&o[1]) {
        Some("shared (CGNAT)")
    } else if ip.is_multicast() || ip.is_broadcast() || o[0] >= 240 {
        Some("multicast or reserved")
    } else if (o[0], o[1], o[2]) == (192, 0, 0) {
        Some("reserved (IETF)")
    } else {
        None
    }
}

/// Whether `host` (a name, not an address) is a `localhost` name.
fn is_localhost_name(host: &str) -> bool {
    let h = host.trim_end_matches('.').to_ascii_lowercase();
    h == "localhost" || h.ends_with(".localhost")
}

impl DestinationPolicy {
    /// A policy allowing the comma- or space-separated addresses and CIDR ranges of `spec`
    /// (`127.0.0.1`, `10.1.0.0/16`, `::1`); empty allows nothing extra. An entry that does not
    /// parse is an error naming it.
    pub fn parse(spec: &str) -> Result<Self, String> {
        let mut allow = Vec::new();
        for entry in spec
            .split([',', ' '])
            .map(str::trim)
            .filter(|e| !e.is_empty())
        {
            let net = match entry.parse::<IpNet>() {
                Ok(n) => n,
                Err(_) => entry
                    .parse::<IpAddr>()
                    .map(IpNet::from)
                    .map_err(|_| format!("'{entry}' is neither an IP address nor a CIDR range"))?,
            };
            allow.push(net);
        }
        Ok(DestinationPolicy { allow })
    }

    /// Whether nothing is allow-listed.
    pub fn is_empty(&self) -> bool {
        self.allow.is_empty()
    }

    /// `Ok` when a webhook may connect to `ip`; otherwise why not.
    pub fn check_ip(&self, ip: IpAddr) -> Result<(), String> {
        let Some(kind) = internal_kind(ip) else {
            return Ok(());
        };
        let plain = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(ip),
            v4 => v4,
        };
        if self
            .allow
            .iter()
            .any(|n| n.contains(&ip) || n.contains(&plain))
        {
            return Ok(());
        }
        Err(format!(
            "{ip} is a {kind} address; webhooks may not go there unless the operator \
             allow-lists it (--webhook-allow)"
        ))
    }

    /// `Ok` when `url` is an http(s) URL with a host a webhook may go to, as far as can be told
    /// without resolving names: an address must pass [`DestinationPolicy::check_ip`]; a
    /// `localhost` name is refused unless loopback is allow-listed. Otherwise why not.
    pub fn check_url(&self, url: &str) -> Result<(), String> {
        let parsed = url::Url::parse(url).map_err(|e| format!("not a URL ({e})"))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err("not an http or https URL".into());
        }
        match parsed.host() {
            None => Err("no host".into()),
            Some(url::Host::Ipv4(a)) => self.check_ip(IpAddr::V4(a)),
            Some(url::Host::Ipv6(a)) => self.check_ip(IpAddr::V6(a)),
            Some(url::Host::Domain(name)) if is_localhost_name(name) => self
                .check_ip(IpAddr::V4(Ipv4Addr::LOCALHOST))
                .and(self.check_ip(IpAddr::V6(Ipv6Addr::LOCALHOST)))
                .map_err(|_| {
                    format!(
                        "'{name}' is a loopback name; webhooks may not go there unless the \
                         operator allow-lists loopback (--webhook-allow 127.0.0.1,::1)"
                    )
                }),
            Some(url::Host::Domain(_)) => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn internal_addresses_are_refused_unless_allow_listed() {
        let none = DestinationPolicy::default();
        for url in [
            "http://169.254.169.254/latest/meta-data/",
            "http://[::1]:22/",
            "http://localhost:6379/",
            "http://LOCALHOST./",
            "http://api.localhost/",
            "http://127.0.0.1/",
            "http://2130706433/",
            "http://0x7f.1/",
            "http://10.0.0.5/",
            "http://172.20.1.1/",
            "http://192.168.1.1/",
            "http://100.64.0.1/",
            "http://0.0.0.0/",
            "http://[::]/",
            "http://[fe80::1]/",
            "http://[fd00:ec2::254]/",
            "http://[::ffff:127.0.0.1]/",
            "http://[64:ff9b::a9fe:a9fe]/",
            "http://user@127.0.0.1:8080/",
        ] {
            assert!(none.check_url(url).is_err(), "{url} was allowed");
        }
        for url in [
            "https://hooks.example.com/in",
            "http://93.184.216.34/",
            "http://[2606:4700::1111]/",
        ] {
            assert_eq!(none.check_url(url), Ok(()), "{url}");
        }
        assert!(none.check_url("ftp://example.com/").is_err());
        let local = DestinationPolicy::parse("127.0.0.1, ::1").unwrap();
        assert_eq!(local.check_url("http://127.0.0.1:9000/hook"), Ok(()));
        assert_eq!(local.check_url("http://localhost:9000/hook"), Ok(()));
        assert_eq!(local.check_url("http://[::ffff:127.0.0.1]/"), Ok(()));
        assert!(local.check_url("http://127.0.0.2/").is_err());
        assert!(local.check_url("http://169.254.169.254/").is_err());
        let net = DestinationPolicy::parse("10.1.0.0/16").unwrap();
        assert_eq!(net.check_ip("10.1.2.3".parse().unwrap()), Ok(()));
        assert!(net.check_ip("10.2.0.1".parse().unwrap()).is_err());
        assert!(DestinationPolicy::parse("not-an-ip").is_err());
    }
}
