//! Publishing to RabbitMQ (AMQP 0-9-1, lapin) as oslo.messaging's notifier does: a topic
//! exchange (the control exchange), the topic's queue declared and bound to it so that
//! nothing is dropped before a listener comes, and the `messagingv2` envelope. Every
//! publish is confirmed by the broker (publisher confirms).

use lapin::options::{
    BasicPublishOptions, ConfirmSelectOptions, ExchangeDeclareOptions, QueueBindOptions,
    QueueDeclareOptions,
};
use lapin::types::FieldTable;
use lapin::{BasicProperties, Channel, Connection, ConnectionProperties, ExchangeKind};

use crate::domain::event::{oslo_envelope, RecordedEvent};

/// Where and how notifications are published.
#[derive(Debug, Clone)]
pub struct BusConfig {
    /// The broker's AMQP URLs, space-separated (`bus_url`), tried in turn.
    pub url: String,
    pub exchange: String,
    /// The topic; the routing key is `<topic>.<priority>` (`notifications.info`).
    pub topic: String,
    /// oslo.messaging's `amqp_durable_queues`.
    pub durable: bool,
    /// How `amqps://` hosts are reached; set, once at start, whenever a URL is one.
    pub tls: Option<super::tls::BusTls>,
}

#[derive(Debug, thiserror::Error)]
pub enum PublishError {
    #[error("message bus: {0}")]
    Amqp(#[from] lapin::Error),
    #[error("the broker refused event {0}")]
    Refused(i64),
    #[error("the broker did not answer in time")]
    TimedOut,
}

impl PublishError {
    /// The broker answered and said no: to these credentials (403 ACCESS_REFUSED), to
    /// this virtual host (530 NOT_ALLOWED, 402 INVALID_PATH), or to the exchange or queues
    /// as configured (406 PRECONDITION_FAILED: declared before with another durability).
    /// Every later attempt gets the same answer, unlike a broker that is not up yet.
    pub fn is_refusal(&self) -> bool {
        let PublishError::Amqp(err) = self else {
            return false;
        };
        match err.kind() {
            lapin::ErrorKind::ProtocolError(amqp) => {
                matches!(amqp.get_id(), 402 | 403 | 406 | 530)
            }
            lapin::ErrorKind::AuthProviderError(_) => true,
            // A certificate the CA file does not vouch for (or a client certificate the
            // broker does not take) fails the same way every time.
            lapin::ErrorKind::IOError(io) => io
                .get_ref()
                .is_some_and(|inner| inner.is::<rustls::Error>()),
            _ => false,
        }
    }
}

/// A confirmed channel to the broker.
pub struct Publisher {
    connection: Connection,
    channel: Channel,
    exchange: String,
}

impl Publisher {
    /// Dials the brokers in turn, each for at most `per_host`: the first that takes the
    /// relay. When none does, a refusal if one refused (that is what needs fixing), else
    /// the last failure.
    pub async fn connect(
        config: &BusConfig,
        per_host: std::time::Duration,
    ) -> Result<Publisher, PublishError> {
        let mut refusal = None;
        let mut last = PublishError::TimedOut;
        for url in super::bus_url::bus_hosts(&config.url) {
            let dialed = tokio::time::timeout(per_host, Self::connect_to(url, config))
                .await
                .unwrap_or(Err(PublishError::TimedOut));
            match dialed {
                Ok(publisher) => return Ok(publisher),
                Err(err) => {
                    tracing::debug!(error = %err, "message bus host did not take the relay; trying the next");
                    if err.is_refusal() && refusal.is_none() {
                        refusal = Some(err);
                    } else {
                        last = err;
                    }
                }
            }
        }
        Err(refusal.unwrap_or(last))
    }

    async fn connect_to(url: &str, config: &BusConfig) -> Result<Publisher, PublishError> {
        let connection = if url.starts_with("amqps://") {
            let tls = config.tls.as_ref().ok_or_else(|| {
                lapin::Error::from(std::io::Error::other("no TLS settings for amqps:// hosts"))
            })?;
            super::tls::connect(url, tls).await?
        } else {
            Connection::connect(url, ConnectionProperties::default()).await?
        };
        let channel = connection.create_channel().await?;
        let durable = config.durable;
        channel
            .exchange_declare(
                config.exchange.as_str().into(),
                ExchangeKind::Topic,
                ExchangeDeclareOptions {
                    durable,
                    ..Default::default()
                },
                FieldTable::default(),
            )
            .await?;
        // oslo's notifier creates the queue of each priority it sends, so notifications
        // wait for listeners that start later: `info`, and `error` for failures.
        for priority in ["info", "error"] {
            let queue = format!("{}.{priority}", config.topic);
            channel
                .queue_declare(
                    queue.as_str().into(),
                    QueueDeclareOptions {
                        durable,
                        ..Default::default()
                    },
                    FieldTable::default(),
                )
                .await?;
            channel
                .queue_bind(
                    queue.as_str().into(),
                    config.exchange.as_str().into(),
                    queue.as_str().into(),
                    QueueBindOptions::default(),
                    FieldTable::default(),
                )
                .await?;
        }
        channel
            .confirm_select(ConfirmSelectOptions::default())
            .await?;
        Ok(Publisher {
            connection,
            channel,
            exchange: config.exchange.clone(),
        })
    }

    pub fn is_connected(&self) -> bool {
        self.connection.status().connected() && self.channel.status().connected()
    }

    /// Publishes `events` in order and waits for the broker's confirms. The sequence
    /// numbers of the leading events the broker confirmed, and the error that stopped
    /// the rest, if any.
    pub async fn publish(
        &self,
        topic: &str,
        events: &[RecordedEvent],
    ) -> (Vec<i64>, Option<PublishError>) {
        let mut pending = Vec::with_capacity(events.len());
        let mut failure = None;
        for event in events {
            let routing_key = format!("{topic}.{}", event.priority.to_ascii_lowercase());
            let body = oslo_envelope(event).to_string();
            let properties = BasicProperties::default()
                .with_content_type("application/json".into())
                .with_content_encoding("utf-8".into())
                .with_delivery_mode(2);
            let sent = self
                .channel
                .basic_publish(
                    self.exchange.as_str().into(),
                    routing_key.as_str().into(),
                    BasicPublishOptions::default(),
                    body.as_bytes(),
                    properties,
                )
                .await;
            match sent {
                Ok(confirm) => pending.push((event.seq, confirm)),
                Err(err) => {
                    failure = Some(err.into());
                    break;
                }
            }
        }
        let mut confirmed = Vec::with_capacity(pending.len());
        for (seq, confirm) in pending {
            match confirm.await {
                Ok(answer) if answer.is_ack() => confirmed.push(seq),
                Ok(_) => {
                    failure.get_or_insert(PublishError::Refused(seq));
                    break;
                }
                Err(err) => {
                    failure.get_or_insert(err.into());
                    break;
                }
            }
        }
        (confirmed, failure)
    }

    pub async fn close(self) {
        let _ = self.connection.close(200, "bye".into()).await;
    }
}
