//! The list of coded providers and the trait objects behind [`Scheme`].

use super::{CODED, GoogleSource, PayPalSource, Scheme, SnsSource};

#[test]
fn every_listed_word_is_the_name_of_the_provider_it_builds() {
    for (word, build) in CODED {
        assert_eq!(build(None).name(), *word);
        assert_eq!(CODED.iter().filter(|(w, _)| w == word).count(), 1, "{word}");
    }
    for name in Scheme::names() {
        let scheme = Scheme::by_name(name, Some("https://x.example")).expect("a known word");
        assert_eq!(scheme.name(), name);
    }
}

#[test]
fn coded_schemes_are_equal_when_provider_and_options_are() {
    let twilio = |url| Scheme::by_name("twilio", Some(url)).expect("coded");
    let a = twilio("https://a.example/in");
    assert_eq!(a, a.clone());
    assert_eq!(a, twilio("https://a.example/in"));
    assert_ne!(a, twilio("https://b.example/in"));
    let sendgrid = Scheme::by_name("sendgrid", None).expect("coded");
    let discord = Scheme::by_name("discord", None).expect("coded");
    assert_ne!(sendgrid, discord);
    assert_ne!(sendgrid, Scheme::Stripe);
}

#[test]
fn a_coded_providers_options_are_reached_by_its_type() {
    let mut sns = Scheme::by_name("sns", None).expect("coded");
    assert!(sns.provider_as::<PayPalSource>().is_none());
    assert!(Scheme::Stripe.provider_as::<SnsSource>().is_none());
    sns.provider_mut::<SnsSource>()
        .expect("an sns scheme")
        .topic_arns
        .push("arn:aws:sns:*".to_owned());
    let options = sns.provider_as::<SnsSource>().expect("an sns scheme");
    assert_eq!(options.topic_arns, ["arn:aws:sns:*"]);
    assert!(sns.fetches_keys());
    let google = Scheme::by_name("google-oidc", None).expect("coded");
    assert!(google.provider_as::<GoogleSource>().is_some());
    assert_ne!(sns, Scheme::by_name("sns", None).expect("coded"));
}
